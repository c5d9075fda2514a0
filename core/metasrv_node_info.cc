#include "core/metasrv_node_info.h"

#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/json_text.h"
#include "rapidjson/document.h"
#include "rapidjson/error/en.h"

namespace metasrv::core {
namespace {

// Reads member `name` into `out` if present; false if present with another
// type.
bool ReadMember(const rapidjson::Value& object, const char* name,
                std::string* out) {
  auto it = object.FindMember(name);
  if (it == object.MemberEnd()) return true;
  if (!it->value.IsString()) return false;
  out->assign(it->value.GetString(), it->value.GetStringLength());
  return true;
}

bool ReadMember(const rapidjson::Value& object, const char* name,
                int64_t* out) {
  auto it = object.FindMember(name);
  if (it == object.MemberEnd()) return true;
  if (!it->value.IsInt64()) return false;
  *out = it->value.GetInt64();
  return true;
}

bool ReadMember(const rapidjson::Value& object, const char* name,
                uint64_t* out) {
  auto it = object.FindMember(name);
  if (it == object.MemberEnd()) return true;
  if (!it->value.IsUint64()) return false;
  *out = it->value.GetUint64();
  return true;
}

}  // namespace

std::string EncodeMetasrvNodeInfo(const MetasrvNodeInfo& node) {
  std::string out = R"({"addr":)";
  AppendSerdeString(node.addr, &out);
  AppendSerdeNodeInfoMembers(node.info, &out);
  out.push_back('}');
  return out;
}

absl::StatusOr<MetasrvNodeInfo> DecodeMetasrvNodeInfo(absl::string_view value) {
  MetasrvNodeInfo node;
  if (value.empty() || value.front() != '{') {
    node.addr = std::string(value);  // An older replica's plain address.
    return node;
  }
  // A NUL-terminated copy with padding: rapidjson's UTF-8 validation may
  // look a few bytes past a truncated sequence.
  std::string padded(value);
  padded.append(4, '\0');
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseValidateEncodingFlag>(padded.data(),
                                                   value.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metasrv node info: ",
        doc.HasParseError() ? rapidjson::GetParseError_En(doc.GetParseError())
                            : "not a JSON object"));
  }
  bool ok = ReadMember(doc, "addr", &node.addr);
  ForEachNodeInfoField(
      [&](const char* name, auto& field) {
        ok = ok && ReadMember(doc, name, &field);
      },
      node.info);
  if (!ok || !doc.HasMember("addr")) {
    return absl::InvalidArgumentError(
        "metasrv node info: a member is missing or of the wrong type");
  }
  return node;
}

}  // namespace metasrv::core
