#include "server/services/cluster_service.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "core/flow_aggregate.h"
#include "core/flow_state_keys.h"
#include "server/codec/flow_state_columns.h"
#include "server/codec/node_info_proto.h"
#include "server/rpc/not_leader.h"
#include "server/rpc/unary_call.h"

namespace metasrv::server {

namespace meta = greptime::v1::meta;

namespace {

// Moves `kvs` into a response's repeated KeyValue field.
void AppendKvs(std::vector<kv::KeyValue>& kvs,
               google::protobuf::RepeatedPtrField<meta::KeyValue>* out) {
  out->Reserve(static_cast<int>(kvs.size()));
  for (kv::KeyValue& kv : kvs) {
    meta::KeyValue* entry = out->Add();
    entry->set_key(std::move(kv.key));
    entry->set_value(std::move(kv.value));
  }
}

// Every field upstream fills (src/meta-srv/src/metasrv.rs,
// From<MetasrvNodeInfo> for the proto): the info, and for older clients the
// deprecated top-level fields and the info's deprecated cpus and
// memory_bytes, from the same values (the totals narrowed as upstream's `as`
// casts narrow them).
void FillNodeInfo(const core::MetasrvNodeInfo& node,
                  meta::MetasrvNodeInfo* out) {
  out->mutable_peer()->set_addr(node.addr);
  meta::NodeInfo* info = out->mutable_info();
  ToProto(node.info, info);
  const auto cpus = static_cast<uint32_t>(info->total_cpu_millicores());
  const auto memory = static_cast<uint64_t>(info->total_memory_bytes());
  info->set_cpus(cpus);
  info->set_memory_bytes(memory);
  out->set_version(info->version());
  out->set_git_commit(info->git_commit());
  out->set_start_time_ms(info->start_time_ms());
  out->set_cpus(cpus);
  out->set_memory_bytes(memory);
}

// Whether a Range reads exactly `__flow/state` (as GreptimeDB's frontend
// gets it: src/common/meta/src/key/flow/flow_state.rs), whose answer is
// kept compressed per state.
bool ReadsFlowState(const meta::RangeRequest& req) {
  return req.key() == core::kFlowStateKey && req.range_end().empty() &&
         !req.keys_only() && req.limit() >= 0;
}

// The leader's answer to that Range of the state whose JSON chunks are
// `json`: the bytes the KV read would give (the header, the one key-value
// when there is flow state).
SharedPieces RangeOfFlowState(const EncodedFlowState& json) {
  meta::RangeResponse response;
  response.mutable_header()->set_protocol_version(1);
  if (json.found) {
    meta::KeyValue* kv = response.add_kvs();
    kv->set_key(std::string(core::kFlowStateKey));
    kv->set_value(core::FlowAggregate::AssembleJson(json.chunks));
  }
  auto bytes = std::make_shared<std::string>();
  response.SerializeToString(bytes.get());
  return {SharedBytes::Of(std::move(bytes))};
}

}  // namespace

ClusterService::ClusterService(const core::FlowStateManager* kv,
                               const core::Leadership* leadership,
                               ReadExecutor* reads, SelfDescription* self,
                               Metrics* metrics)
    : kv_(kv),
      leadership_(leadership),
      reads_(reads),
      self_(self),
      metrics_(Metrics::OrDiscard(metrics)),
      flow_state_range_(&RangeOfFlowState) {}

void ClusterService::Register(CallDispatcher* dispatcher) {
  dispatcher->Add(Method::kBatchGet, BatchGetCall::Factory([this](
                                         BatchGetCall* call) { BatchGet(call); }));
  dispatcher->Add(Method::kRange,
                  RangeCall::Factory([this](RangeCall* call) { Range(call); }));
  dispatcher->Add(Method::kMetasrvPeers, PeersCall::Factory([this](
                                             PeersCall* call) {
                    MetasrvPeers(call);
                  }));
}

template <typename Request, typename Response, typename Fill>
void ClusterService::Serve(UnaryCall<Request, Response>* call, ReadCost cost,
                           Fill fill) {
  meta::ResponseHeader* header = call->response()->mutable_header();
  if (call->admission().kind == Admission::Kind::kAnswerNotLeader) {
    SetNotLeader(*leadership_, header);
    call->Finish(absl::OkStatus());
    return;
  }
  header->set_protocol_version(1);
  ScheduleRead(reads_, cost, call, fill);
}

void ClusterService::BatchGet(BatchGetCall* call) {
  Serve(call, ReadCost::kLarge,
        [this](const meta::BatchGetRequest& req,
               meta::BatchGetResponse* resp) -> absl::Status {
          const absl::Time start = absl::Now();
          std::vector<std::string> keys(req.keys().begin(), req.keys().end());
          absl::StatusOr<std::vector<kv::KeyValue>> found = kv_->BatchGet(keys);
          metrics_->KvRequested(KvRead::kBatchGet, absl::Now() - start);
          if (!found.ok()) return found.status();
          AppendKvs(*found, resp->mutable_kvs());
          return absl::OkStatus();
        });
}

void ClusterService::Range(RangeCall* call) {
  // `__flow/state` for a client that takes zstd: compressed once per state.
  if (call->answer_compression() == Compression::kZstd &&
      call->admission().kind != Admission::Kind::kAnswerNotLeader &&
      ReadsFlowState(call->request())) {
    ScheduleRead(reads_, ReadCost::kLarge, call,
                 [this, call](const meta::RangeRequest&,
                              meta::RangeResponse*) -> absl::Status {
                   const absl::Time start = absl::Now();
                   const EncodedFlowState json = EncodeFlowStateJson(*kv_);
                   metrics_->KvRequested(KvRead::kRange, absl::Now() - start);
                   CompressedAnswer answer =
                       *flow_state_range_.GetZstd(json, false, true);
                   call->SetResponseBytes(std::move(answer.bytes),
                                          answer.compression);
                   return absl::OkStatus();
                 });
    return;
  }
  Serve(call, ReadCost::kLarge,
        [this](const meta::RangeRequest& req,
               meta::RangeResponse* resp) -> absl::Status {
          const absl::Time start = absl::Now();
          absl::StatusOr<kv::RangeResponse> found = kv_->Range(
              {req.key(), req.range_end(), req.limit(), req.keys_only()});
          metrics_->KvRequested(KvRead::kRange, absl::Now() - start);
          if (!found.ok()) return found.status();
          AppendKvs(found->kvs, resp->mutable_kvs());
          resp->set_more(found->more);
          return absl::OkStatus();
        });
}

void ClusterService::MetasrvPeers(PeersCall* call) {
  Serve(call, ReadCost::kSmall,
        [this](const meta::MetasrvPeersRequest&,
               meta::MetasrvPeersResponse* resp) -> absl::Status {
          // As upstream: the leader (this replica) describes itself now; the
          // followers are what they registered in the election's store.
          const core::MetasrvNodeInfo me = self_->Now();
          FillNodeInfo(me, resp->mutable_leader());
          for (const core::MetasrvNodeInfo& peer : leadership_->Peers()) {
            if (peer.addr != me.addr) FillNodeInfo(peer, resp->add_followers());
          }
          return absl::OkStatus();
        });
}

}  // namespace metasrv::server
