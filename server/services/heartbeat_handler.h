// What the metasrv does with one heartbeat request. No gRPC here: the
// HeartbeatStream handler calls it, and so do the tests and the fuzzer.
#ifndef METASRV_SERVER_SERVICES_HEARTBEAT_HANDLER_H_
#define METASRV_SERVER_SERVICES_HEARTBEAT_HANDLER_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/flow_state_manager.h"
#include "core/leadership.h"
#include "greptime/v1/meta/heartbeat.pb.h"
#include "metasrv/v1/heartbeat_frame.pb.h"
#include "server/codec/heartbeat_request.h"
#include "server/ops/metrics.h"
#include "server/ops/refused_reports.h"
#include "server/rpc/method_table.h"
#include "server/rpc/not_leader.h"

namespace metasrv::server {

// GreptimeDB tells frontends to heartbeat this many times less often than
// other nodes (`frontend_heartbeat_interval` in
// src/common/meta/src/distributed_time_constants.rs).
inline constexpr uint64_t kFrontendIntervalFactor = 6;

// Why a request's flow state was or was not merged.
enum class MergeResult {
  kMerged,       // Recorded as the node's latest report.
  kNotFlownode,  // The role is not FLOWNODE: flow_stat is ignored.
  kNoFlowStat,   // No flow_stat: only the flownode's record was updated.
  kNoNodeId,     // Neither a header nor a peer names the node.
};

class HeartbeatHandler {
 public:
  // The settings --heartbeat_interval, --retry_interval and
  // --max_flows_per_report: declared here, with their defaults, and held
  // whole by ServerOptions (as `heartbeat`).
  struct Options {
    // The base interval sent in handshake responses: datanodes and flownodes
    // get it, frontends kFrontendIntervalFactor times it.
    absl::Duration heartbeat_interval = absl::Seconds(3);
    // Sent in handshake responses to all.
    absl::Duration retry_interval = absl::Seconds(3);
    // A report of more flows is refused with kInvalidArgument.
    uint64_t max_flows_per_report = 100000;
  };

  // Borrows the pointers; they must outlive the handler. Null `metrics`:
  // none kept. Null `refused`: refusals are logged and counted only.
  // Thread-safe.
  HeartbeatHandler(core::FlowStateManager* flow_state,
                   const core::Leadership* leadership, Options options,
                   Metrics* metrics = nullptr,
                   RefusedReports* refused = nullptr);

  // Handles one request of a stream, read whole (`parsed`: the stream
  // shape's decode, DecodeMessage, or HeartbeatRequestReader::Parse held to
  // max_flows_per_report()), admitted as `admission` says (the heartbeat's
  // row of the method table, applied by the stream shape); `handshake` is
  // true for its first, whose answer carries the heartbeat config (also
  // when not leading).
  // - OK: send `*response` and go on reading.
  // - kAborted: this replica does not lead. `*response` carries the
  //   not-leader error; send it, then end the stream with ABORTED.
  // - any other error (kInvalidArgument for too many flows or a malformed
  //   extension; or a failed merge): end the stream with it; send nothing.
  //   The node's previous report stays as it was.
  // `origin` is the client's host as the shares key it (its node slot is
  // charged to it at --max_nodes); empty: none.
  absl::Status Handle(ParsedHeartbeat parsed, bool handshake,
                      const Admission& admission,
                      greptime::v1::meta::HeartbeatResponse* response,
                      const std::string& origin = "");

  // Records a flownode's heartbeat (its peer address and NodeInfo) and
  // merges its flow state (with the start times of the
  // kFlowStartTimeExtension extension, if any) if its role and identity
  // allow; records another node's cluster info. `parsed` is the request
  // read whole (HeartbeatRequestReader::Parse).
  // `state_term` is the leadership term's (see
  // FlowStateManager::Heartbeat): kAborted if it ended. kInvalidArgument for
  // too many flows or a malformed extension; nothing is recorded then.
  absl::StatusOr<MergeResult> MergeFlowStat(
      ParsedHeartbeat parsed,
      std::optional<uint64_t> state_term = std::nullopt);

  // A report of more flows is refused (--max_flows_per_report).
  uint64_t max_flows_per_report() const {
    return options_.max_flows_per_report;
  }

 private:
  // The heartbeat interval to tell a node of `role`.
  uint64_t IntervalFor(int role) const;

  core::FlowStateManager* const flow_state_;  // Where reports go; borrowed.
  const core::Leadership* const leadership_;  // Whether we lead; borrowed.
  const Options options_;                     // Handshake config, limits.
  Metrics* const metrics_;         // Borrowed; never null (Metrics::OrDiscard).
  RefusedReports* const refused_;  // Borrowed; or null.

  // A flownode's report was refused for `reason`: counted, logged
  // (rate-limited, per node), and remembered for ListFlownodes.
  void Refuse(uint64_t node, IgnoredReason reason, const absl::Status& why);
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_SERVICES_HEARTBEAT_HANDLER_H_
