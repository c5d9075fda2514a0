// Who may call what, declared once: every method's leader policy and
// whether it needs admin rights (the table in call_gate.cc), and the one
// check each service makes before it serves a call.
#ifndef METASRV_SERVER_RPC_CALL_GATE_H_
#define METASRV_SERVER_RPC_CALL_GATE_H_

#include <grpcpp/server_context.h>

#include <optional>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/leadership.h"
#include "server/ops/admin_auth.h"
#include "server/rpc/unary_call.h"

namespace metasrv::server {

// Every method the server serves, but reflection's and health's (served by
// any replica, to anyone).
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
};

// What a replica that does not lead does with a call.
enum class LeaderPolicy {
  kAnywhere,  // Serves it: it is how clients find the leader.
  // Answers with GreptimeDB's not-leader header (not_leader.h) and no data,
  // as upstream's followers do; the client asks again elsewhere.
  kLeaderOrAnswer,
  // Refuses it: FAILED_PRECONDITION naming the leader (our own API).
  kLeaderOrRefuse,
};

struct MethodPolicy {
  const char* name;     // The method's name, for logs.
  LeaderPolicy leader;  // Followers' answer.
  bool admin;           // Needs the admin token (or loopback, without one).
};

// `method`'s row of the table.
const MethodPolicy& PolicyOf(Method method);

// What the service does with an admitted call.
enum class Admission {
  kServe,            // Serve it.
  kAnswerNotLeader,  // Answer with SetNotLeader's header and nothing else.
};

// Thread-safe: the admin rights may be replaced while calls are admitted.
class CallGate {
 public:
  // Borrows `leadership`, which must outlive the gate.
  CallGate(const core::Leadership* leadership, AdminAuth auth);

  // Admits a call of `method`: its admin rights first (a refusal is
  // logged, rate-limited, never with the token: kUnauthenticated or
  // kPermissionDenied), then the leader policy (kFailedPrecondition for
  // kLeaderOrRefuse on a follower). The status is what to finish with.
  absl::StatusOr<Admission> Admit(Method method,
                                  grpc::ServerContextBase* context) const;

  const core::Leadership& leadership() const { return *leadership_; }

  // Admin calls admitted from now on are checked against `auth` (a token
  // re-read on SIGHUP).
  void SetAdminAuth(AdminAuth auth) ABSL_LOCKS_EXCLUDED(auth_mu_);

 private:
  const core::Leadership* const leadership_;  // Who leads; borrowed.
  mutable absl::Mutex auth_mu_;               // Guards auth_.
  AdminAuth auth_ ABSL_GUARDED_BY(auth_mu_);  // Who may call admin methods.
};

// Admits `call`, a decoded unary call of `method`, through `gate`: how to
// serve it, or nullopt when it was refused (and so finished).
template <typename Request, typename Response>
std::optional<Admission> AdmitCall(const CallGate& gate, Method method,
                                   UnaryCall<Request, Response>* call) {
  absl::StatusOr<Admission> admitted = gate.Admit(method, call->context());
  if (!admitted.ok()) {
    call->Finish(admitted.status());
    return std::nullopt;
  }
  return *admitted;
}

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_CALL_GATE_H_
