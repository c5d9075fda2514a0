#include "server/cluster_service.h"

#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"
#include "server/heartbeat_handler.h"

namespace metasrv::server {

namespace meta = greptime::v1::meta;

namespace {

grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* context,
                               const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

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

void FillNodeInfo(const SelfInfo& self, const std::string& addr,
                  meta::MetasrvNodeInfo* out) {
  out->mutable_peer()->set_addr(addr);
  if (addr == self.addr) {
    out->mutable_info()->set_version(self.version);
    out->mutable_info()->set_start_time_ms(self.start_time_ms);
    out->mutable_info()->set_hostname(self.hostname);
  }
}

}  // namespace

ClusterService::ClusterService(const kv::KvBackend* kv,
                               const core::Leadership* leadership,
                               ReadExecutor* reads, SelfInfo self)
    : kv_(kv), leadership_(leadership), reads_(reads), self_(std::move(self)) {
  SetMessageAllocatorFor_Range(&range_allocator_);
  SetMessageAllocatorFor_BatchGet(&batch_get_allocator_);
}

bool ClusterService::Admit(grpc::CallbackServerContext* context,
                           bool has_header, meta::ResponseHeader* header,
                           grpc::ServerUnaryReactor** reactor) const {
  if (!has_header) {
    *reactor = Done(context, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                          "request has no header"));
    return false;
  }
  header->set_protocol_version(1);
  if (!leadership_->IsLeader()) {
    header->mutable_error()->set_code(kNotLeaderErrorCode);
    header->mutable_error()->set_err_msg(
        absl::StrCat("not leader; leader is '", leadership_->LeaderAddr(), "'"));
    *reactor = Done(context, grpc::Status::OK);
    return false;
  }
  return true;
}

template <typename Request, typename Response, typename Fill>
grpc::ServerUnaryReactor* ClusterService::ServeRead(
    grpc::CallbackServerContext* context, const Request* request,
    Response* response, Fill fill) {
  grpc::ServerUnaryReactor* reactor = nullptr;
  if (!Admit(context, request->has_header(), response->mutable_header(),
             &reactor)) {
    return reactor;
  }
  reactor = context->DefaultReactor();
  reads_->Schedule([request, response, reactor, fill] {
    reactor->Finish(ToGrpcStatus(fill(*request, response)));
  });
  return reactor;
}

grpc::ServerUnaryReactor* ClusterService::BatchGet(
    grpc::CallbackServerContext* context, const meta::BatchGetRequest* request,
    meta::BatchGetResponse* response) {
  return ServeRead(context, request, response,
                   [this](const meta::BatchGetRequest& req,
                          meta::BatchGetResponse* resp) -> absl::Status {
                     std::vector<std::string> keys(req.keys().begin(),
                                                   req.keys().end());
                     absl::StatusOr<std::vector<kv::KeyValue>> found =
                         kv_->BatchGet(keys);
                     if (!found.ok()) return found.status();
                     AppendKvs(*found, resp->mutable_kvs());
                     return absl::OkStatus();
                   });
}

grpc::ServerUnaryReactor* ClusterService::Range(
    grpc::CallbackServerContext* context, const meta::RangeRequest* request,
    meta::RangeResponse* response) {
  return ServeRead(context, request, response,
                   [this](const meta::RangeRequest& req,
                          meta::RangeResponse* resp) -> absl::Status {
                     absl::StatusOr<kv::RangeResponse> found = kv_->Range(
                         {req.key(), req.range_end(), req.limit(), req.keys_only()});
                     if (!found.ok()) return found.status();
                     AppendKvs(found->kvs, resp->mutable_kvs());
                     resp->set_more(found->more);
                     return absl::OkStatus();
                   });
}

grpc::ServerUnaryReactor* ClusterService::MetasrvPeers(
    grpc::CallbackServerContext* context,
    const meta::MetasrvPeersRequest* request,
    meta::MetasrvPeersResponse* response) {
  if (!request->has_header()) {
    return Done(context, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                      "request has no header"));
  }
  response->mutable_header()->set_protocol_version(1);
  const std::string leader = leadership_->LeaderAddr();
  if (!leader.empty()) FillNodeInfo(self_, leader, response->mutable_leader());
  for (const std::string& addr : leadership_->FollowerAddrs()) {
    FillNodeInfo(self_, addr, response->add_followers());
  }
  return Done(context, grpc::Status::OK);
}

}  // namespace metasrv::server
