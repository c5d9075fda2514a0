// Every method the server serves, declared once: one row each, giving its
// path, kind, request type, leader policy and whether it needs admin
// rights. The dispatcher (call_dispatcher.h) looks calls
// up here and the door (call_door.h) admits them by their row; services
// bind a handler to a Method and name nothing else.
//
// Also the leader half of admission, gRPC-free, so that the heartbeat
// handler (which merges under the term it was admitted with) and the door
// decide alike: AdmitLeader().
#ifndef METASRV_SERVER_RPC_METHOD_TABLE_H_
#define METASRV_SERVER_RPC_METHOD_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/leadership.h"
#include "server/ops/call_metrics.h"
#include "server/rpc/call_ledger.h"

namespace metasrv::server {

// The rows of the table, in its order.
enum class Method {
  kHeartbeat,  // greptime.v1.meta.Heartbeat
  kAskLeader,
  kBatchGet,  // greptime.v1.meta.Cluster
  kRange,
  kMetasrvPeers,
  kGetFlowState,  // metasrv.v1.FlowState
  kListFlownodes,
  kWatchFlowState,
  kLeaderChange,  // metasrv.v1.Admin
  kForgetFlows,
  kForgetNodes,
  kDescribeReplica,  // metasrv.v1.Replica
  kHealthCheck,  // grpc.health.v1.Health
  kHealthWatch,
  kReflectionV1,  // grpc.reflection.v1 and v1alpha
  kReflectionV1alpha,
};
inline constexpr int kMethodCount =
    static_cast<int>(Method::kReflectionV1alpha) + 1;

// What a replica that does not lead does with a call.
enum class LeaderPolicy {
  kAnywhere,  // Serves it: it is how clients find the leader, or ops'.
  // Answers with GreptimeDB's not-leader header (not_leader.h) and no data,
  // as upstream's followers do; the client asks again elsewhere.
  kLeaderOrAnswer,
  // Refuses it: FAILED_PRECONDITION naming the leader (our own API).
  kLeaderOrRefuse,
};

struct MethodRow {
  Method method;
  const char* path;        // "/package.Service/Method", as on the wire.
  const char* name;        // The method's name, for logs.
  CallMetrics::Type kind;  // Unary or streaming, for the call metrics.
  const char* request;     // The request message's full name.
  LeaderPolicy leader;     // Followers' answer.
  bool admin;              // Needs the admin token (or loopback, without one).
  // A cluster cannot live without it (a flownode's heartbeat, AskLeader,
  // health): its answers are charged like any other but never refused for
  // want of room that other calls' unread answers hold. They are small.
  bool always_answered;
  // Its request, inflated, at most; 0: the server's --max_message_bytes.
  size_t max_request_bytes = 0;
};

// `method`'s row.
const MethodRow& RowOf(Method method);
// What the ledger counts a call of `method` as (call_ledger.h).
CallKind CallKindOf(Method method);
// The row of the method at `path`, or null for a path nobody serves.
const MethodRow* FindMethod(absl::string_view path);
// Every service the table's paths name ("package.Service"), each once, in
// the table's order: what server reflection lists.
const std::vector<std::string>& ServiceNames();

// How an admitted call is served, and under which leadership.
struct Admission {
  // Serve it; or answer with GreptimeDB's not-leader header and nothing else.
  enum class Kind { kServe, kAnswerNotLeader } kind = Kind::kServe;
  // The flow-state term of the leadership it was admitted under (writes
  // decided now are refused once the state moved on); nullopt: standalone,
  // or not leading.
  std::optional<uint64_t> state_term;
};

// The leader half of admitting a call (or one heartbeat request) of
// `method`: what to do with it given who leads now. kFailedPrecondition,
// naming the leader, for kLeaderOrRefuse on a replica that does not lead.
// Thread-safe.
absl::StatusOr<Admission> AdmitLeader(Method method,
                                      const core::Leadership& leadership);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_METHOD_TABLE_H_
