#include "core/cluster_info.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/json_text.h"
#include "rapidjson/document.h"
#include "rapidjson/error/en.h"

namespace metasrv::core {
namespace {

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// serde_json's recursion limit: the deepest nesting it reads.
constexpr int kSerdeMaxDepth = 127;

void AppendWorkloads(const std::vector<int32_t>& types, std::string* out) {
  out->append(R"({"workloads":{"types":[)");
  for (size_t i = 0; i < types.size(); ++i) {
    if (i > 0) out->push_back(',');
    absl::StrAppend(out, types[i]);
  }
  out->append("]}}");
}

// NodeStatus, externally tagged: {"Variant":{fields}}.
void AppendStatus(const ClusterNode& node, std::string* out) {
  switch (node.role) {
    case NodeRole::kDatanode:
      // DatanodeStatus of a heartbeat without region stats.
      out->append(R"({"Datanode":{"rcus":0,"wcus":0,"leader_regions":0,)"
                  R"("follower_regions":0,"workloads":{"types":[]}}})");
      return;
    case NodeRole::kFrontend:
      out->append(R"({"Frontend":)");
      break;
    case NodeRole::kFlownode:
      out->append(R"({"Flownode":)");
      break;
  }
  AppendWorkloads(node.workloads, out);
  out->push_back('}');
}

// Whether `s` is UTF-8 as Rust's String holds it: no overlong forms, no
// surrogates, nothing past U+10FFFF.
bool IsStrictUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    unsigned lo = 0x80, hi = 0xbf;  // The second byte's range.
    if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;  // No surrogates.
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // Cut short.
    const auto second = static_cast<unsigned char>(s[i + 1]);
    if (second < lo || second > hi) return false;
    for (size_t k = 2; k <= n; ++k) {
      const auto next = static_cast<unsigned char>(s[i + k]);
      if (next < 0x80 || next > 0xbf) return false;
    }
    i += n + 1;
  }
  return true;
}

// The deepest nesting of arrays and objects in `json`, strings skipped.
int Depth(absl::string_view json) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : json) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

absl::Status NotEnvVars(absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("\"", kEnvVarsExtension, "\" is not EnvVars: ", why));
}

absl::StatusOr<EnvVars> ReadVars(const rapidjson::Value& vars) {
  if (!vars.IsObject()) return NotEnvVars("\"vars\" is not an object");
  EnvVars out;
  for (const auto& member : vars.GetObject()) {
    if (!member.value.IsString()) {
      return NotEnvVars("a variable's value is not a string");
    }
    std::string name(member.name.GetString(), member.name.GetStringLength());
    std::string value(member.value.GetString(),
                      member.value.GetStringLength());
    if (!IsStrictUtf8(name) || !IsStrictUtf8(value)) {
      return NotEnvVars("a variable is not valid UTF-8");
    }
    auto same = std::find_if(out.begin(), out.end(),
                             [&](const auto& v) { return v.first == name; });
    if (same != out.end()) {
      same->second = std::move(value);  // A map keeps the last.
    } else {
      out.emplace_back(std::move(name), std::move(value));
    }
  }
  return out;
}

}  // namespace

std::string ClusterInfoKey(NodeRole role, uint64_t node_id) {
  return absl::StrCat(kClusterInfoPrefix, static_cast<int32_t>(role), "-",
                      node_id);
}

absl::StatusOr<EnvVars> ParseEnvVars(absl::string_view json) {
  if (json.size() > kMaxEnvVarsBytes) {
    return NotEnvVars(absl::StrCat(json.size(), " bytes, more than the limit of ",
                                   kMaxEnvVarsBytes));
  }
  if (Depth(json) > kSerdeMaxDepth) return NotEnvVars("nested too deeply");
  // A NUL-terminated copy with padding: rapidjson's UTF-8 validation may
  // look a few bytes past a truncated sequence.
  std::string padded(json);
  padded.append(4, '\0');
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseValidateEncodingFlag |
            rapidjson::kParseIterativeFlag>(padded.data(), json.size());
  if (doc.HasParseError()) {
    return NotEnvVars(rapidjson::GetParseError_En(doc.GetParseError()));
  }
  if (doc.IsArray()) {  // serde's sequence form of a struct.
    if (doc.Size() != 1) {
      return NotEnvVars("an array of other than one element");
    }
    return ReadVars(doc[0]);
  }
  if (!doc.IsObject()) return NotEnvVars("not a JSON object");
  const rapidjson::Value* vars = nullptr;
  for (const auto& member : doc.GetObject()) {
    if (absl::string_view(member.name.GetString(),
                          member.name.GetStringLength()) != "vars") {
      continue;  // serde ignores members it does not know.
    }
    if (vars != nullptr) return NotEnvVars("duplicate member \"vars\"");
    vars = &member.value;
  }
  if (vars == nullptr) return NotEnvVars("no member \"vars\"");
  return ReadVars(*vars);
}

std::string EncodeClusterNodeInfo(const ClusterNode& node,
                                  int64_t last_activity_ms) {
  const NodeInfo& info = node.info;
  std::string out;
  out.reserve(256 + node.peer_addr.size() + info.version.size() +
              info.git_commit.size() + info.hostname.size());
  absl::StrAppend(&out, R"({"peer":{"id":)", node.peer_id, R"(,"addr":)");
  AppendSerdeString(node.peer_addr, &out);
  absl::StrAppend(&out, R"(},"last_activity_ts":)", last_activity_ms,
                  R"(,"status":)");
  AppendStatus(node, &out);
  AppendSerdeNodeInfoMembers(info, &out);
  out.append(R"(,"env_vars":{)");
  for (size_t i = 0; i < node.env_vars.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendSerdeString(node.env_vars[i].first, &out);
    out.push_back(':');
    AppendSerdeString(node.env_vars[i].second, &out);
  }
  out.append("}}");
  return out;
}

}  // namespace metasrv::core
