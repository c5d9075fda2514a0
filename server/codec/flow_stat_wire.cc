#include "server/codec/flow_stat_wire.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "greptime/v1/meta/heartbeat.pb.h"

namespace metasrv::server {
namespace {

// Tag bytes of what the fast path knows (field number << 3 | wire type).
// A FlowStat map of a field (its row's flow_stat_map) comes as LEN entries.
constexpr uint8_t kEntryKey = 1 << 3 | 0;        // A map entry's key, VARINT.
constexpr uint8_t kEntryValue = 2 << 3 | 0;      // Its value, VARINT.

// Reads a varint of at most `max_bytes` bytes at *p (before `end`) into
// *out and advances *p. False, with nothing read, for one the fast path
// leaves to protobuf: truncated, longer, or with bits past the 64th.
inline bool ReadVarintOf(int max_bytes, const uint8_t** p, const uint8_t* end,
                         uint64_t* out) {
  uint64_t value = 0;
  const uint8_t* at = *p;
  for (int shift = 0; shift < 7 * max_bytes; shift += 7) {
    if (at == end) return false;
    const uint8_t byte = *at++;
    if (shift == 63 && byte > 1) return false;
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (byte < 0x80) {
      *p = at;
      *out = value;
      return true;
    }
  }
  return false;
}

// A varint of up to ten bytes (any uint64).
bool ReadVarint(const uint8_t** p, const uint8_t* end, uint64_t* out) {
  return ReadVarintOf(10, p, end, out);
}

// Reads a length at *p (before `end`) that fits in what follows, and
// advances *p. Only lengths of up to four bytes: protobuf refuses some longer
// encodings, and no FlowStat part comes near 2^28 bytes.
bool ReadLength(const uint8_t** p, const uint8_t* end, uint64_t* out) {
  const uint8_t* at = *p;
  if (!ReadVarintOf(4, &at, end, out) ||
      *out > static_cast<uint64_t>(end - at)) {
    return false;
  }
  *p = at;
  return true;
}

// Skips an unknown field's payload of wire type `wire` (VARINT, I64, LEN or
// I32). False for groups and invalid wire types, and for anything truncated.
bool SkipField(int wire, const uint8_t** p, const uint8_t* end) {
  uint64_t n = 0;
  switch (wire) {
    case 0:
      return ReadVarint(p, end, &n);
    case 1:
      n = 8;
      break;
    case 2:
      if (!ReadLength(p, end, &n)) return false;
      break;
    case 5:
      n = 4;
      break;
    default:
      return false;
  }
  if (n > static_cast<uint64_t>(end - *p)) return false;
  *p += n;
  return true;
}

// One map entry's payload [p, end): its key and value; a field given twice
// counts last, a missing one is 0. False for anything but key and value
// varints.
bool ReadEntry(const uint8_t* p, const uint8_t* end, uint32_t* key,
               uint64_t* value) {
  uint64_t k = 0;
  uint64_t v = 0;
  while (p < end) {
    const uint8_t tag = *p++;
    if (tag == kEntryKey) {
      if (!ReadVarint(&p, end, &k)) return false;
    } else if (tag == kEntryValue) {
      if (!ReadVarint(&p, end, &v)) return false;
    } else {
      return false;
    }
  }
  *key = static_cast<uint32_t>(k);  // uint32 keys keep the low 32 bits.
  *value = v;
  return true;
}

// Whether `tag` is that of a field's FlowStat map (core/flow_fields.h).
inline bool IsMapTag(uint8_t tag) {
#define METASRV_FIELD_MAP_TAG(Name, member, type, bit, combine, key, required, \
                              map, ...)                                        \
  || ((map) != 0 && tag == ((map) << 3 | 2))
  return false METASRV_FLOW_FIELDS(METASRV_FIELD_MAP_TAG);
#undef METASRV_FIELD_MAP_TAG
}

// Sets the entry (`key`, `value`) of the map whose tag is `tag` (IsMapTag).
inline void SetEntry(uint8_t tag, uint32_t key, uint64_t value,
                     core::FlowStateValue::Builder* builder) {
#define METASRV_FIELD_SET_ENTRY(Name, member, type, bit, combine, json_key, \
                                required, map, ...)                         \
  if ((map) != 0 && tag == ((map) << 3 | 2)) {                              \
    builder->Set##Name(key, static_cast<type>(value));                      \
    return;                                                                 \
  }
  METASRV_FLOW_FIELDS(METASRV_FIELD_SET_ENTRY)
#undef METASRV_FIELD_SET_ENTRY
}

// The fast path: true when every field was one it knows or an unknown field
// with a one-byte tag that it skipped.
bool DecodeDirect(absl::string_view bytes,
                  core::FlowStateValue::Builder* builder) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* const end = p + bytes.size();
  while (p < end) {
    const uint8_t tag = *p++;
    if (IsMapTag(tag)) {
      uint64_t length = 0;
      if (!ReadLength(&p, end, &length)) return false;
      uint32_t key = 0;
      uint64_t value = 0;
      if (!ReadEntry(p, p + length, &key, &value)) return false;
      p += length;
      SetEntry(tag, key, value, builder);
      continue;
    }
    // A one-byte tag of another field (numbers 1 to 15; not 0, which no
    // message may hold), skipped as protobuf skips unknown fields.
    if (tag >= 0x80 || (tag >> 3) == 0 || !SkipField(tag & 7, &p, end)) {
      return false;
    }
  }
  return true;
}

// The entries of a FlowStat, counted without reading them (up to the first
// field the fast path does not know).
size_t CountEntries(absl::string_view bytes) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* const end = p + bytes.size();
  size_t entries = 0;
  while (p < end) {
    const uint8_t tag = *p++;
    if (tag >= 0x80 || (tag >> 3) == 0 || !SkipField(tag & 7, &p, end)) break;
    entries += IsMapTag(tag);
  }
  return entries;
}

// Above this many bytes, a FlowStat's entries are counted first and room
// made for all at once.
constexpr size_t kCountAbove = 4096;

}  // namespace

bool DecodeFlowStat(absl::string_view bytes,
                    core::FlowStateValue::Builder* builder) {
  const size_t before = builder->size();
  if (bytes.size() > kCountAbove) {
    builder->Reserve(before + CountEntries(bytes));
  }
  if (DecodeDirect(bytes, builder)) return true;
  builder->Truncate(before);
  // Whatever the fast path does not know, protobuf decides: what it parsed,
  // its unknown fields dropped, serialized again is in the form the fast
  // path reads (one-byte tags, entries of a key and a value). Its maps hold
  // each key once (the last given), so their order does not matter.
  greptime::v1::meta::FlowStat stat;
  if (!stat.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return false;
  }
  stat.DiscardUnknownFields();
  const std::string canonical = stat.SerializeAsString();
  if (DecodeDirect(canonical, builder)) return true;
  builder->Truncate(before);
  return false;
}

}  // namespace metasrv::server
