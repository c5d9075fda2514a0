#include "core/flownode_record.h"

#include <string>

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
    return absl::InvalidArgumentError("flownode record: \"info\" must be an object");
  }
  NodeInfo info;
  for (absl::Status s :
       {Read(object, "version", &info.version),
        Read(object, "git_commit", &info.git_commit),
        Read(object, "start_time_ms", &info.start_time_ms),
        Read(object, "hostname", &info.hostname),
        Read(object, "total_cpu_millicores", &info.total_cpu_millicores),
        Read(object, "total_memory_bytes", &info.total_memory_bytes),
        Read(object, "cpu_usage_millicores", &info.cpu_usage_millicores),
        Read(object, "memory_usage_bytes", &info.memory_usage_bytes)}) {
    if (!s.ok()) return s;
  }
  return info;
}

}  // namespace

bool NodeInfo::operator==(const NodeInfo& o) const {
  return version == o.version && git_commit == o.git_commit &&
         start_time_ms == o.start_time_ms && hostname == o.hostname &&
         total_cpu_millicores == o.total_cpu_millicores &&
         total_memory_bytes == o.total_memory_bytes &&
         cpu_usage_millicores == o.cpu_usage_millicores &&
         memory_usage_bytes == o.memory_usage_bytes;
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
    WriteString(w, "version", info.version);
    WriteString(w, "git_commit", info.git_commit);
    w.Key("start_time_ms");
    w.Uint64(info.start_time_ms);
    WriteString(w, "hostname", info.hostname);
    WriteInt(w, "total_cpu_millicores", info.total_cpu_millicores);
    WriteInt(w, "total_memory_bytes", info.total_memory_bytes);
    WriteInt(w, "cpu_usage_millicores", info.cpu_usage_millicores);
    WriteInt(w, "memory_usage_bytes", info.memory_usage_bytes);
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
  for (absl::Status s : {Read(doc, "peer_addr", &record.peer_addr),
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
