// The metasrv.v1.Replica service: what a replica says of itself (its role,
// the leader it names and why none, its store), answered by every replica.
#ifndef METASRV_SERVER_SERVICES_REPLICA_SERVICE_H_
#define METASRV_SERVER_SERVICES_REPLICA_SERVICE_H_

#include <functional>
#include <string>

#include "core/leadership.h"
#include "server/ops/metrics.h"
#include "server/ops/self_description.h"
#include "server/rpc/call_dispatcher.h"
#include "server/rpc/method_table.h"
#include "server/rpc/unary_call.h"

namespace metasrv::server {

// Why `leadership` names no leader, in words: the store unreachable (for
// how long, the last error) or an election in progress. Empty when it names
// one. `store` is null when standalone.
std::string NoLeaderReason(const core::Leadership& leadership,
                           const std::string& backend,
                           const std::function<StoreHealth()>* store);

class ReplicaService final {
 public:
  // Borrows `leadership` and `self`; they must outlive the service.
  // `backend` is --backend in force; `store` gives its health, unset when
  // standalone.
  ReplicaService(const core::Leadership* leadership, SelfDescription* self,
                 std::string backend, std::function<StoreHealth()> store);

  // Serves Describe through `dispatcher`.
  void Register(CallDispatcher* dispatcher);

 private:
  const core::Leadership* const leadership_;  // Who leads; borrowed.
  SelfDescription* const self_;               // Address, version; borrowed.
  const std::string backend_;                 // --backend in force.
  const std::function<StoreHealth()> store_;  // Unset: standalone.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_SERVICES_REPLICA_SERVICE_H_
