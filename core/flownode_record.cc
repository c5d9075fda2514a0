#include "core/flownode_record.h"

#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "rapidjson/document.h"
#include "rapidjson/error/en.h"

namespace metasrv::core {
namespace {

// Appends `"key":`, after a comma unless `out` ends an opening brace.
void AppendKey(const char* key, std::string* out) {
  if (out->back() != '{') out->push_back(',');
  absl::StrAppend(out, "\"", key, "\":");
}

// Appends `value` as a JSON string, escaped as rapidjson's Writer escapes:
// the quote, the backslash and control characters; other bytes as they are.
void AppendString(const char* key, absl::string_view value, std::string* out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  AppendKey(key, out);
  out->push_back('"');
  for (const char ch : value) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xF]);
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

void AppendInt(const char* key, int64_t value, std::string* out) {
  AppendKey(key, out);
  absl::StrAppend(out, value);
}

void AppendInt(const char* key, uint64_t value, std::string* out) {
  AppendKey(key, out);
  absl::StrAppend(out, value);
}

// Reads member `key` of `object` into `out`; kInvalidArgument if absent or not
// of the right type.
absl::Status Read(const rapidjson::Value& object, const char* key,
                  std::string* out) {
  auto it = object.FindMember(key);
  if (it == object.MemberEnd() || !it->value.IsString()) {
    return absl::InvalidArgumentError(
        absl::StrCat("flownode record: \"", key, "\" must be a string"));
  }
  out->assign(it->value.GetString(), it->value.GetStringLength());
  return absl::OkStatus();
}

absl::Status Read(const rapidjson::Value& object, const char* key,
                  int64_t* out) {
  auto it = object.FindMember(key);
  if (it == object.MemberEnd() || !it->value.IsInt64()) {
    return absl::InvalidArgumentError(
        absl::StrCat("flownode record: \"", key, "\" must be an int64"));
  }
  *out = it->value.GetInt64();
  return absl::OkStatus();
}

absl::Status Read(const rapidjson::Value& object, const char* key,
                  uint64_t* out) {
  auto it = object.FindMember(key);
  if (it == object.MemberEnd() || !it->value.IsUint64()) {
    return absl::InvalidArgumentError(
        absl::StrCat("flownode record: \"", key, "\" must be a uint64"));
  }
  *out = it->value.GetUint64();
  return absl::OkStatus();
}

absl::StatusOr<NodeInfo> ReadInfo(const rapidjson::Value& object) {
  if (!object.IsObject()) {
    return absl::InvalidArgumentError(
        "flownode record: \"info\" must be an object");
  }
  NodeInfo info;
  absl::Status status;
  ForEachNodeInfoField(
      [&](const char* name, auto& field) {
        if (status.ok()) status = Read(object, name, &field);
      },
      info);
  if (!status.ok()) return status;
  return info;
}

}  // namespace

bool NodeInfo::operator==(const NodeInfo& o) const {
  bool equal = true;
  ForEachNodeInfoField([&equal](const char*, const auto& a,
                                const auto& b) { equal = equal && a == b; },
                       *this, o);
  return equal;
}

bool FlownodeRecord::operator==(const FlownodeRecord& o) const {
  return peer_addr == o.peer_addr && last_heartbeat_ms == o.last_heartbeat_ms &&
         last_report_ms == o.last_report_ms && info == o.info;
}

std::string EncodeFlownodeRecord(const FlownodeRecord& record) {
  // Written by hand: rapidjson's Writer does pointer arithmetic on a null
  // stack when it first writes, which UBSan reports (as for its reader, see
  // flow_state_codec.cc).
  std::string out = "{";
  AppendString("peer_addr", record.peer_addr, &out);
  AppendInt("last_heartbeat_ms", record.last_heartbeat_ms, &out);
  AppendInt("last_report_ms", record.last_report_ms, &out);
  if (record.info.has_value()) {
    AppendKey("info", &out);
    out.push_back('{');
    ForEachNodeInfoField(
        [&out](const char* name, const auto& field) {
          if constexpr (std::is_same_v<std::decay_t<decltype(field)>,
                                       std::string>) {
            AppendString(name, field, &out);
          } else {
            AppendInt(name, field, &out);
          }
        },
        *record.info);
    out.push_back('}');
  }
  out.push_back('}');
  return out;
}

absl::StatusOr<FlownodeRecord> DecodeFlownodeRecord(absl::string_view json) {
  // A NUL-terminated copy with padding: rapidjson's UTF-8 validation may
  // look a few bytes past a truncated sequence.
  std::string padded(json);
  padded.append(4, '\0');
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseValidateEncodingFlag>(padded.data(), json.size());
  if (doc.HasParseError()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "flownode record: ", rapidjson::GetParseError_En(doc.GetParseError()),
        " at offset ", doc.GetErrorOffset()));
  }
  if (!doc.IsObject()) {
    return absl::InvalidArgumentError("flownode record: not a JSON object");
  }
  FlownodeRecord record;
  for (absl::Status s :
       {Read(doc, "peer_addr", &record.peer_addr),
        Read(doc, "last_heartbeat_ms", &record.last_heartbeat_ms),
        Read(doc, "last_report_ms", &record.last_report_ms)}) {
    if (!s.ok()) return s;
  }
  auto info = doc.FindMember("info");
  if (info != doc.MemberEnd()) {
    absl::StatusOr<NodeInfo> decoded = ReadInfo(info->value);
    if (!decoded.ok()) return decoded.status();
    record.info = *std::move(decoded);
  }
  return record;
}

}  // namespace metasrv::core
