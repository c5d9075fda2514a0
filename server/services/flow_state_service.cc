#include "server/services/flow_state_service.h"

#include <optional>
#include <utility>

#include "server/codec/flow_state_columns.h"
#include "server/codec/node_info_proto.h"
#include "server/rpc/unary_call.h"
#include "server/watch/watch_stream.h"

namespace metasrv::server {

FlowStateService::FlowStateService(const core::FlowStateManager* flow_state,
                                   ReadExecutor* reads, WatchHub* watch,
                                   Metrics* metrics,
                                   const RefusedReports* refused)
    : flow_state_(flow_state),
      reads_(reads),
      watch_(watch),
      metrics_(Metrics::OrDiscard(metrics)),
      refused_(refused) {}

void FlowStateService::Register(CallDispatcher* dispatcher) {
  dispatcher->Add(Method::kGetFlowState,
                  GetCall::Factory([this](GetCall* call) { GetFlowState(call); }));
  dispatcher->Add(Method::kListFlownodes, ListCall::Factory([this](
                                              ListCall* call) {
                    ListFlownodes(call);
                  }));
  dispatcher->Add(Method::kWatchFlowState, PushCall::Factory([this]() {
                    return std::unique_ptr<PushCall::Handler>(
                        new WatchStream(watch_, metrics_));
                  }));
}

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

void FlowStateService::GetFlowState(GetCall* call) {
  using Request = metasrv::v1::GetFlowStateRequest;
  using Response = metasrv::v1::GetFlowStateResponse;
  // kLeaderOrRefuse: the door finished a follower's call with its refusal.
  if (call->request().flow_ids_size() == 0) {
    // All flows: the cached chunk encodings, sent without a copy (or their
    // one zstd copy, for a client that takes it). When every chunk is cached
    // (an unchanged state) and nothing is to be compressed, the answer is
    // made here, without the hop to a read thread and back.
    const bool zstd = call->answer_compression() == Compression::kZstd;
    const bool with_nodes = call->request().with_nodes();
    if (std::optional<EncodedFlowState> cached =
            CachedFlowStateColumns(*flow_state_, with_nodes)) {
      std::optional<CompressedAnswer> answer =
          zstd ? full_state_.GetZstd(*cached, with_nodes, false)
               : CompressedAnswer{full_state_.Get(*cached, with_nodes)};
      if (answer.has_value()) {
        call->SetResponseBytes(std::move(answer->bytes), answer->compression);
        call->Finish(absl::OkStatus());
        return;
      }
    }
    ScheduleRead(reads_, ReadCost::kLarge, call,
                 [this, call, zstd](const Request& req, Response*) {
                   const EncodedFlowState state =
                       EncodeFlowStateColumns(*flow_state_, req.with_nodes());
                   CompressedAnswer answer =
                       zstd ? *full_state_.GetZstd(state, req.with_nodes(), true)
                            : CompressedAnswer{
                                  full_state_.Get(state, req.with_nodes())};
                   call->SetResponseBytes(std::move(answer.bytes),
                                          answer.compression);
                   return absl::OkStatus();
                 });
    return;
  }
  ScheduleRead(reads_, Cost(call->request()), call,
               [this, call](const Request& req, Response*) {
                 call->SetResponseBytes(ToPieces(EncodeFlowStateColumns(
                     *flow_state_,
                     absl::MakeConstSpan(req.flow_ids().data(),
                                         req.flow_ids_size()),
                     req.with_nodes())));
                 return absl::OkStatus();
               });
}

void FlowStateService::ListFlownodes(ListCall* call) {
  ScheduleRead(reads_, Cost(call->request()), call,
               [this](const metasrv::v1::ListFlownodesRequest& req,
                      metasrv::v1::ListFlownodesResponse* resp) {
                 return ListNodes(req, resp);
               });
}

absl::Status FlowStateService::ListNodes(
    const metasrv::v1::ListFlownodesRequest& request,
    metasrv::v1::ListFlownodesResponse* response) const {
  const absl::Span<const uint64_t> only =
      absl::MakeConstSpan(request.node_ids().data(), request.node_ids_size());
  const std::vector<core::FlownodeView> nodes = flow_state_->ListFlownodes(only);
  const std::vector<Refusal> refused =
      refused_ == nullptr ? std::vector<Refusal>() : refused_->List(only);
  response->mutable_nodes()->Reserve(
      static_cast<int>(nodes.size() + refused.size()));
  // Both ascending by id: merged, each refused node beside its record (or
  // alone, when the leader holds nothing of it).
  auto next_refused = refused.begin();
  auto add_refused = [&](metasrv::v1::Flownode* node) {
    node->set_node_id(next_refused->node_id);
    node->set_refused(next_refused->why);
    node->set_refused_reports(next_refused->count);
    node->set_last_refused_ms(next_refused->last_ms);
    ++next_refused;
  };
  for (const core::FlownodeView& view : nodes) {
    while (next_refused != refused.end() &&
           next_refused->node_id < view.node_id) {
      add_refused(response->add_nodes());
    }
    metasrv::v1::Flownode* node = response->add_nodes();
    if (next_refused != refused.end() &&
        next_refused->node_id == view.node_id) {
      add_refused(node);
    }
    node->set_node_id(view.node_id);
    node->set_peer_addr(view.record.peer_addr);
    node->set_last_heartbeat_ms(view.record.last_heartbeat_ms);
    node->set_last_report_ms(view.record.last_report_ms);
    node->set_flow_count(view.flow_count);
    if (view.record.info.has_value()) {
      ToProto(*view.record.info, node->mutable_info());
    }
  }
  while (next_refused != refused.end()) add_refused(response->add_nodes());
  return absl::OkStatus();
}

}  // namespace metasrv::server
