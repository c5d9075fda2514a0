#include "server/services/flow_state_service.h"

#include "server/codec/flow_state_columns.h"
#include "server/codec/flow_state_response.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/request_decoder.h"
#include "server/rpc/unary_call.h"
#include "server/services/node_info_proto.h"

namespace metasrv::server {

FlowStateService::FlowStateService(const core::FlowStateManager* flow_state,
                                   const CallGate* gate, ReadExecutor* reads,
                                   WatchHub* watch, Metrics* metrics,
                                   CallLimits limits, CallSeries* watch_series)
    : flow_state_(flow_state),
      gate_(gate),
      reads_(reads),
      watch_(watch),
      metrics_(Metrics::OrDiscard(metrics)),
      limits_(limits),
      watch_series_(watch_series) {}

namespace {

// A read of a few flows or nodes is small; of all, large.
constexpr int kSmallRead = 1024;
ReadCost Cost(const metasrv::v1::GetFlowStateRequest& request) {
  const int n = request.flow_ids_size();
  return n > 0 && n <= kSmallRead ? ReadCost::kSmall : ReadCost::kLarge;
}
ReadCost Cost(const metasrv::v1::ListFlownodesRequest& request) {
  const int n = request.node_ids_size();
  return n > 0 && n <= kSmallRead ? ReadCost::kSmall : ReadCost::kLarge;
}

}  // namespace

template <typename Request, typename Response, typename Read>
grpc::ServerUnaryReactor* FlowStateService::LeaderRead(
    Method method, grpc::CallbackServerContext* context,
    const grpc::ByteBuffer* request, grpc::ByteBuffer* response, Read read) {
  grpc::ServerUnaryReactor* reactor = nullptr;
  Admission admission = Admission::kServe;  // The only one, for our API.
  auto* call =
      StartAdmitted<Request, Response>(*gate_, method, context, request,
                                       response, limits_, &reactor, &admission);
  if (call != nullptr) ScheduleRead(reads_, Cost(call->request()), call, read);
  return reactor;
}

grpc::ServerUnaryReactor* FlowStateService::GetFlowState(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  using Request = metasrv::v1::GetFlowStateRequest;
  using Response = metasrv::v1::GetFlowStateResponse;
  grpc::ServerUnaryReactor* reactor = nullptr;
  Admission admission = Admission::kServe;
  auto* call = StartAdmitted<Request, Response>(*gate_, Method::kGetFlowState,
                                                context, request, response,
                                                limits_, &reactor, &admission);
  if (call == nullptr) return reactor;
  if (call->request().flow_ids_size() == 0) {
    // All flows: the cached chunk encodings, sent without a copy. When every
    // chunk is cached (an unchanged state) there is nothing to encode: the
    // answer is made here, without the hop to a read thread and back.
    if (std::optional<EncodedFlowState> cached = CachedFlowStateColumns(
            *flow_state_, call->request().with_nodes())) {
      call->SetResponseBytes(
          full_state_.Get(*cached, call->request().with_nodes()));
      call->Finish(absl::OkStatus());
      return reactor;
    }
    ScheduleRead(reads_, ReadCost::kLarge, call,
                 [this, call](const Request& req, Response*) {
                   call->SetResponseBytes(full_state_.Get(
                       EncodeFlowStateColumns(*flow_state_, req.with_nodes()),
                       req.with_nodes()));
                   return absl::OkStatus();
                 });
    return reactor;
  }
  ScheduleRead(reads_, Cost(call->request()), call,
               [this](const Request& req, Response* resp) {
                 return FillFlowState(*flow_state_,
                                      absl::MakeConstSpan(req.flow_ids().data(),
                                                          req.flow_ids_size()),
                                      req.with_nodes(), resp);
               });
  return reactor;
}

grpc::ServerUnaryReactor* FlowStateService::ListFlownodes(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return LeaderRead<metasrv::v1::ListFlownodesRequest,
                    metasrv::v1::ListFlownodesResponse>(
      Method::kListFlownodes, context, request, response,
      [this](const metasrv::v1::ListFlownodesRequest& req,
             metasrv::v1::ListFlownodesResponse* resp) {
        return ListNodes(req, resp);
      });
}

absl::Status FlowStateService::ListNodes(
    const metasrv::v1::ListFlownodesRequest& request,
    metasrv::v1::ListFlownodesResponse* response) const {
  const std::vector<core::FlownodeView> nodes = flow_state_->ListFlownodes(
      absl::MakeConstSpan(request.node_ids().data(), request.node_ids_size()));
  response->mutable_nodes()->Reserve(static_cast<int>(nodes.size()));
  for (const core::FlownodeView& view : nodes) {
    metasrv::v1::Flownode* node = response->add_nodes();
    node->set_node_id(view.node_id);
    node->set_peer_addr(view.record.peer_addr);
    node->set_last_heartbeat_ms(view.record.last_heartbeat_ms);
    node->set_last_report_ms(view.record.last_report_ms);
    node->set_flow_count(view.flow_count);
    if (view.record.info.has_value()) {
      ToProto(*view.record.info, node->mutable_info());
    }
  }
  return absl::OkStatus();
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* FlowStateService::WatchFlowState(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) {
  absl::Status refused =
      gate_->Admit(Method::kWatchFlowState, context).status();
  metasrv::v1::WatchFlowStateRequest parsed;
  if (refused.ok()) {
    grpc::ByteBuffer copy(*request);
    refused = DecodeRequest(&copy, limits_.max_request_bytes, &parsed);
  }
  if (!refused.ok()) {
    // A reactor that only finishes.
    class Refusal final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
     public:
      Refusal(const grpc::Status& status, CallSeries* series)
          : counted_(series) {
        counted_.Finishing(static_cast<int>(status.error_code()));
        Finish(status);
      }
      void OnDone() override {
        counted_.Done();
        delete this;
      }

     private:
      SelfCountedCall counted_;  // Its call metrics.
    };
    return new Refusal(ToGrpcStatus(refused, context), watch_series_);
  }
  return new WatchStream(watch_, context, parsed.deltas(), metrics_,
                         watch_series_);
}

}  // namespace metasrv::server
