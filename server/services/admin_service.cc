#include "server/services/admin_service.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/rpc/unary_call.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {

AdminService::AdminService(LeaderChangeFn leader_change,
                           core::FlowStateManager* flow_state)
    : leader_change_(std::move(leader_change)), flow_state_(flow_state) {}

template <typename Request, typename Response, typename Handle>
void AdminService::Add(CallDispatcher* dispatcher, Method method,
                       Handle handle) {
  using Call = UnaryCall<Request, Response>;
  // kLeaderOrRefuse, admin: the door finished a refused call.
  dispatcher->Add(method, Call::Factory([handle](Call* call) {
                    call->Finish(handle(call->request(), call->response(),
                                        call->peer()));
                  }));
}

void AdminService::Register(CallDispatcher* dispatcher) {
  Add<metasrv::v1::LeaderChangeRequest, metasrv::v1::LeaderChangeResponse>(
      dispatcher, Method::kLeaderChange,
      [this](const metasrv::v1::LeaderChangeRequest&,
             metasrv::v1::LeaderChangeResponse* resp, const std::string& peer) {
        absl::StatusOr<uint64_t> dropped = leader_change_();
        if (!dropped.ok()) return dropped.status();
        spdlog::info("leader change requested by {}: {} keys dropped", peer,
                     *dropped);
        resp->set_dropped_keys(*dropped);
        return absl::OkStatus();
      });
  Add<metasrv::v1::ForgetFlowsRequest, metasrv::v1::ForgetFlowsResponse>(
      dispatcher, Method::kForgetFlows,
      [this](const metasrv::v1::ForgetFlowsRequest& req,
             metasrv::v1::ForgetFlowsResponse* resp, const std::string& peer) {
        const auto& ids = req.flow_ids();
        absl::StatusOr<core::ForgetResult> forgotten = flow_state_->ForgetFlows(
            absl::MakeConstSpan(ids.data(), ids.size()));
        if (!forgotten.ok()) return forgotten.status();
        spdlog::info(
            "forget flows requested by {}: {} of {} flows forgotten, {} "
            "node reports rewritten",
            peer, forgotten->forgotten_flows, ids.size(),
            forgotten->updated_nodes);
        resp->set_forgotten_flows(forgotten->forgotten_flows);
        resp->set_updated_nodes(forgotten->updated_nodes);
        return absl::OkStatus();
      });
  Add<metasrv::v1::ForgetNodesRequest, metasrv::v1::ForgetNodesResponse>(
      dispatcher, Method::kForgetNodes,
      [this](const metasrv::v1::ForgetNodesRequest& req,
             metasrv::v1::ForgetNodesResponse* resp, const std::string& peer) {
        const auto& ids = req.node_ids();
        absl::StatusOr<uint64_t> forgotten = flow_state_->ForgetNodes(
            absl::MakeConstSpan(ids.data(), ids.size()));
        if (!forgotten.ok()) return forgotten.status();
        spdlog::info("forget nodes requested by {}: {} of {} nodes forgotten",
                     peer, *forgotten, ids.size());
        resp->set_forgotten_nodes(*forgotten);
        return absl::OkStatus();
      });
}

}  // namespace metasrv::server
