#include "core/flow_state_keys.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace metasrv::core {
namespace {

// The node id after `prefix` in `key`, as a canonical decimal uint64.
std::optional<uint64_t> ParseNodeKey(absl::string_view prefix,
                                     absl::string_view key) {
  if (!absl::ConsumePrefix(&key, prefix)) return std::nullopt;
  if (key.empty() || (key.size() > 1 && key[0] == '0')) return std::nullopt;
  for (char c : key) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  uint64_t id = 0;
  if (!absl::SimpleAtoi(key, &id)) return std::nullopt;
  return id;
}

}  // namespace

std::string FlowStateNodeKey(uint64_t node_id) {
  return absl::StrCat(kFlowStateNodePrefix, node_id);
}

std::optional<uint64_t> ParseFlowStateNodeKey(absl::string_view key) {
  return ParseNodeKey(kFlowStateNodePrefix, key);
}


}  // namespace metasrv::core
