#include "server/services/replica_service.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "metasrv/v1/metasrv.pb.h"
#include "server/rpc/unary_call.h"

namespace metasrv::server {

std::string NoLeaderReason(const core::Leadership& leadership,
                           const std::string& backend,
                           const std::function<StoreHealth()>* store) {
  if (!leadership.LeaderAddr().empty()) return "";
  if (store != nullptr && *store) {
    const StoreHealth health = (*store)();
    if (!health.healthy) {
      return absl::StrCat(
          "the store (", backend, ") has been unreachable for ",
          absl::FormatDuration(
              absl::Trunc(health.unhealthy_for, absl::Milliseconds(100))),
          ": ", health.last_error);
    }
  }
  return "an election is in progress";
}

ReplicaService::ReplicaService(const core::Leadership* leadership,
                               SelfDescription* self, std::string backend,
                               std::function<StoreHealth()> store)
    : leadership_(leadership),
      self_(self),
      backend_(std::move(backend)),
      store_(std::move(store)) {}

void ReplicaService::Register(CallDispatcher* dispatcher) {
  using Call = UnaryCall<metasrv::v1::DescribeReplicaRequest,
                         metasrv::v1::DescribeReplicaResponse>;
  dispatcher->Add(
      Method::kDescribeReplica,
      Call::Factory([this, door = &dispatcher->door()](Call* call) {
        metasrv::v1::DescribeReplicaResponse* out = call->response();
        const core::MetasrvNodeInfo self = self_->Now();
        out->set_addr(self.addr);
        out->set_version(self.info.version);
        const bool leading = leadership_->IsLeader();
        out->set_role(!store_ ? metasrv::v1::REPLICA_ROLE_STANDALONE
                      : leading ? metasrv::v1::REPLICA_ROLE_LEADER
                                : metasrv::v1::REPLICA_ROLE_FOLLOWER);
        out->set_leader_addr(leadership_->LeaderAddr());
        out->set_no_leader_reason(
            NoLeaderReason(*leadership_, backend_, &store_));
        if (store_) {
          const StoreHealth health = store_();
          metasrv::v1::ReplicaStore* store = out->mutable_store();
          store->set_backend(backend_);
          store->set_reachable(health.healthy);
          store->set_unreachable_for_ms(
              absl::ToInt64Milliseconds(health.unhealthy_for));
          store->set_last_error(health.last_error);
          store->set_lease_remaining_ms(
              static_cast<int64_t>(health.lease_seconds * 1000));
        }
        out->set_refusing(door->Refusing());
        call->Finish(absl::OkStatus());
      }));
}

}  // namespace metasrv::server
