#include "core/flow_state_codec.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "rapidjson/error/en.h"
#include "rapidjson/reader.h"

namespace metasrv::core {
namespace {

// Per field of flow_fields.h, in its order: its map's name, whether a value
// must have it, its bit, and whether its values are signed.
#define METASRV_FIELD_JSON(Name, member, type, bit, combine, key, required, \
                           ...)                                             \
  {key, required, k##Name, std::is_signed_v<type>},
struct JsonField {
  absl::string_view name;
  bool required;
  FlowField bit;
  bool is_signed;
};
constexpr JsonField kJsonFields[kFlowFieldCount] = {
    METASRV_FLOW_FIELDS(METASRV_FIELD_JSON)};
#undef METASRV_FIELD_JSON

// Appends `"<flow_id>":<value>`, comma-separated. Formats into a stack
// buffer and appends once: this runs for every flow of every encode.
// ,"4294967295":-9223372036854775808 is 34 bytes; the buffer has room to
// spare. GCC cannot see that std::to_chars stays short of the end and warns
// about the writes after it, wrongly: the warning is off for this function.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
template <typename T>
void AppendMember(std::string* out, uint32_t flow_id, T value) {
  char buf[48];
  char* const end = buf + sizeof(buf);
  char* p = buf;
  if (!out->empty()) *p++ = ',';
  *p++ = '"';
  p = std::to_chars(p, end, flow_id).ptr;
  *p++ = '"';
  *p++ = ':';
  p = std::to_chars(p, end, value).ptr;
  out->append(buf, static_cast<size_t>(p - buf));
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

void AppendMap(std::string* out, int field,
               absl::Span<const FlowStateJsonParts* const> parts) {
  absl::StrAppend(out, "\"", kJsonFields[field].name, "\":{");
  bool first = true;
  for (const FlowStateJsonParts* p : parts) {
    const std::string& s = p->maps[field];
    if (s.empty()) continue;
    if (!first) out->push_back(',');
    out->append(s);
    first = false;
  }
  out->push_back('}');
}

// Parses a canonical decimal flow id: no sign, no leading zeros, <= 2^32-1.
bool ParseFlowId(absl::string_view s, uint32_t* out) {
  if (s.empty() || s.size() > 10 || (s.size() > 1 && s[0] == '0')) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > std::numeric_limits<uint32_t>::max()) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// A rapidjson SAX handler that accepts exactly the flow-state shape. Each
// callback returns false to stop the parse; error_ then says why.
class Handler
    : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Handler> {
 public:
  bool Default() { return Fail("unexpected JSON value"); }

  bool StartObject() {
    if (state_ == kStart) {
      state_ = kTop;
      return true;
    }
    if (state_ == kMapExpected) {
      state_ = kMapKey;
      seen_in_map_.clear();
      return true;
    }
    return Fail("unexpected object");
  }

  bool EndObject(rapidjson::SizeType) {
    if (state_ == kMapKey) {
      state_ = kTop;
      return true;
    }
    if (state_ == kTop) {
      for (const JsonField& f : kJsonFields) {
        if (f.required && (seen_maps_ & f.bit) == 0) {
          return Fail(absl::StrCat("missing \"", f.name, "\""));
        }
      }
      state_ = kDone;
      return true;
    }
    return Fail("unexpected end of object");
  }

  bool Key(const char* str, rapidjson::SizeType len, bool) {
    absl::string_view key(str, len);
    if (state_ == kTop) {
      int field = 0;
      while (field < kFlowFieldCount && kJsonFields[field].name != key) ++field;
      if (field == kFlowFieldCount) {
        return Fail(absl::StrCat("unknown field \"", key, "\""));
      }
      if (seen_maps_ & kJsonFields[field].bit) {
        return Fail(absl::StrCat("repeated field \"", key, "\""));
      }
      seen_maps_ |= kJsonFields[field].bit;
      field_ = field;
      state_ = kMapExpected;
      return true;
    }
    if (state_ == kMapKey) {
      if (!ParseFlowId(key, &flow_id_)) {
        return Fail(absl::StrCat("flow id \"", key,
                                 "\" is not a decimal number in [0, 2^32-1]"));
      }
      if (!seen_in_map_.insert(flow_id_).second) {
        return Fail(absl::StrCat("flow id ", flow_id_, " repeated"));
      }
      state_ = kMapValue;
      return true;
    }
    return Fail("unexpected key");
  }

  bool Int(int v) { return Signed(v); }
  bool Int64(int64_t v) { return Signed(v); }
  bool Uint(unsigned v) { return Unsigned(v); }
  bool Uint64(uint64_t v) { return Unsigned(v); }
  bool Double(double) {
    if (state_ != kMapValue) return Default();
    return Fail("value is not an integer within 64 bits");
  }

  FlowStateValue Finish() && { return std::move(builder_).Build(); }
  bool done() const { return state_ == kDone; }
  const std::string& error() const { return error_; }

 private:
  enum State { kStart, kTop, kMapExpected, kMapKey, kMapValue, kDone };

  bool Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    return false;
  }

  bool Signed(int64_t v) {
    if (state_ != kMapValue) return Default();
    if (!kJsonFields[field_].is_signed && v < 0) {
      return Fail(absl::StrCat("negative value in \"",
                               kJsonFields[field_].name, "\""));
    }
    return Set(static_cast<uint64_t>(v));
  }

  bool Unsigned(uint64_t v) {
    if (state_ != kMapValue) return Default();
    if (kJsonFields[field_].is_signed &&
        v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Fail(absl::StrCat("value in \"", kJsonFields[field_].name,
                               "\" beyond int64"));
    }
    return Set(v);
  }

  // Sets the field being read to `bits` (an int64 as its two's complement).
  bool Set(uint64_t bits) {
    switch (kJsonFields[field_].bit) {
#define METASRV_FIELD_CASE(Name, member, type, ...)              \
  case k##Name:                                                  \
    builder_.Set##Name(flow_id_, static_cast<type>(bits));       \
    break;
      METASRV_FLOW_FIELDS(METASRV_FIELD_CASE)
#undef METASRV_FIELD_CASE
    }
    state_ = kMapKey;
    return true;
  }

  State state_ = kStart;          // Where in the shape the parser is.
  uint8_t seen_maps_ = 0;         // FlowField bits of the maps seen so far.
  int field_ = 0;                 // The map being read: its row.
  uint32_t flow_id_ = 0;          // The key whose value comes next.
  absl::flat_hash_set<uint32_t> seen_in_map_;  // Flow ids seen in this map.
  FlowStateValue::Builder builder_;            // What was read so far.
  std::string error_;                          // Why the parse stopped.
};

}  // namespace

void AppendFlowStateParts(const FlowStat& stat, FlowStateJsonParts* parts) {
  int field = 0;
#define METASRV_FIELD_APPEND(Name, member, ...)                         \
  if (stat.has(k##Name)) {                                              \
    AppendMember(&parts->maps[field], stat.flow_id, stat.member);       \
  }                                                                     \
  ++field;
  METASRV_FLOW_FIELDS(METASRV_FIELD_APPEND)
#undef METASRV_FIELD_APPEND
}

std::string AssembleFlowState(
    absl::Span<const FlowStateJsonParts* const> parts) {
  size_t total = 64;
  for (const FlowStateJsonParts* p : parts) {
    for (const std::string& map : p->maps) total += map.size() + 1;
  }
  std::string out;
  out.reserve(total);
  out.push_back('{');
  for (int field = 0; field < kFlowFieldCount; ++field) {
    if (field > 0) out.push_back(',');
    AppendMap(&out, field, parts);
  }
  out.push_back('}');
  return out;
}

std::string JoinFlowStateParts(const FlowStateJsonParts& parts) {
  std::string out;
  size_t total = 0;
  for (const std::string& map : parts.maps) total += map.size() + 1;
  out.reserve(total);
  for (int field = 0; field < kFlowFieldCount; ++field) {
    if (field > 0) out.push_back('\0');
    out.append(parts.maps[field]);
  }
  return out;
}

std::string AssembleFlowStateChunks(
    absl::Span<const absl::string_view> chunks) {
  // Each map's members, chunk by chunk.
  constexpr size_t kMaps = kFlowFieldCount;
  std::vector<std::array<absl::string_view, kMaps>> split;
  split.reserve(chunks.size());
  size_t total = 64;
  for (absl::string_view chunk : chunks) {
    std::array<absl::string_view, kMaps>& maps = split.emplace_back();
    for (size_t m = 0; m < kMaps; ++m) {
      const size_t end = m + 1 < kMaps ? chunk.find('\0') : chunk.size();
      maps[m] = chunk.substr(0, end);
      chunk.remove_prefix(std::min(chunk.size(), end + 1));
      total += maps[m].size() + 1;
    }
  }
  std::string out;
  out.reserve(total);
  out.push_back('{');
  for (size_t m = 0; m < kMaps; ++m) {
    if (m > 0) out.push_back(',');
    absl::StrAppend(&out, "\"", kJsonFields[m].name, "\":{");
    bool first = true;
    for (const auto& maps : split) {
      if (maps[m].empty()) continue;
      if (!first) out.push_back(',');
      out.append(maps[m].data(), maps[m].size());
      first = false;
    }
    out.push_back('}');
  }
  out.push_back('}');
  return out;
}

std::string EncodeFlowState(const FlowStateValue& value) {
  FlowStateJsonParts parts;
  for (const FlowStat& stat : value.flows()) AppendFlowStateParts(stat, &parts);
  const FlowStateJsonParts* one[] = {&parts};
  return AssembleFlowState(one);
}

absl::StatusOr<FlowStateValue> DecodeFlowState(absl::string_view json) {
  // Parsed in situ, in a NUL-terminated copy: strings are decoded in place.
  // (Copying them to rapidjson's own stack instead does pointer arithmetic on
  // a null pointer when the stack is first used, which UBSan reports.)
  // rapidjson's UTF-8 validation takes up to three continuation bytes without
  // looking for the end, so a multi-byte sequence cut off by the end of input
  // reads past the terminating NUL: the padding keeps those reads inside the
  // buffer (they see NULs and fail validation).
  constexpr size_t kPadding = 8;
  std::string buffer;
  buffer.reserve(json.size() + kPadding);
  buffer.append(json.data(), json.size());
  buffer.append(kPadding, '\0');
  rapidjson::InsituStringStream stream(buffer.data());
  rapidjson::Reader reader;
  Handler handler;
  constexpr unsigned kFlags =
      rapidjson::kParseValidateEncodingFlag | rapidjson::kParseInsituFlag;
  rapidjson::ParseResult result = reader.Parse<kFlags>(stream, handler);
  if (result.IsError() || !handler.done()) {
    std::string why = handler.error().empty()
                          ? rapidjson::GetParseError_En(result.Code())
                          : handler.error();
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid flow state JSON at byte ", result.Offset(), ": ", why));
  }
  // rapidjson treats a NUL byte as the end of input; anything after the value
  // that it did not consume is trailing garbage. Reads stop at the copy's
  // terminating NUL, so they never leave `buffer`.
  if (stream.Tell() != json.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid flow state JSON at byte ", stream.Tell(), ": trailing bytes"));
  }
  return std::move(handler).Finish();
}

}  // namespace metasrv::core
