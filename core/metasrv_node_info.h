// What a metasrv replica says about itself to the others: GreptimeDB's
// MetasrvNodeInfo (src/meta-srv/src/metasrv.rs), which each candidate
// registers in the election's store, and the leader lists for whoever asks
// which replicas there are.
#ifndef METASRV_CORE_METASRV_NODE_INFO_H_
#define METASRV_CORE_METASRV_NODE_INFO_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/flownode_record.h"

namespace metasrv::core {

// One replica: its advertised address and its build and resources.
struct MetasrvNodeInfo {
  std::string addr;  // Advertised address.
  NodeInfo info;     // Version, commit, start time, resources, host name.
  bool operator==(const MetasrvNodeInfo& o) const {
    return addr == o.addr && info == o.info;
  }
};

// serde_json of upstream's MetasrvNodeInfo, fields in its declaration
// order: addr, version, git_commit, start_time_ms, total_cpu_millicores,
// total_memory_bytes, cpu_usage_millicores, memory_usage_bytes, hostname.
std::string EncodeMetasrvNodeInfo(const MetasrvNodeInfo& node);

// Decodes it; members upstream marks #[serde(default)] (the resources and
// the host name) may be missing, unknown members are skipped.
// kInvalidArgument for anything else. A value that is not JSON at all (an
// older replica's plain address) is taken as that address with no info.
absl::StatusOr<MetasrvNodeInfo> DecodeMetasrvNodeInfo(absl::string_view value);

}  // namespace metasrv::core

#endif  // METASRV_CORE_METASRV_NODE_INFO_H_
