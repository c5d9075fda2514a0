#include "core/flownode_record.h"

#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "rapidjson/document.h"
#include "rapidjson/error/en.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace metasrv::core {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void WriteString(Writer& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

void WriteInt(Writer& w, const char* key, int64_t value) {
  w.Key(key);
  w.Int64(value);
}

void WriteInt(Writer& w, const char* key, uint64_t value) {
  w.Key(key);
  w.Uint64(value);
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
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  WriteString(w, "peer_addr", record.peer_addr);
  WriteInt(w, "last_heartbeat_ms", record.last_heartbeat_ms);
  WriteInt(w, "last_report_ms", record.last_report_ms);
  if (record.info.has_value()) {
    const NodeInfo& info = *record.info;
    w.Key("info");
    w.StartObject();
    ForEachNodeInfoField(
        [&w](const char* name, const auto& field) {
          if constexpr (std::is_same_v<std::decay_t<decltype(field)>,
                                       std::string>) {
            WriteString(w, name, field);
          } else {
            WriteInt(w, name, field);
          }
        },
        info);
    w.EndObject();
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
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
