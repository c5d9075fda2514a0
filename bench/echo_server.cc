// The baseline: a bare gRPC bidi echo of the Heartbeat service, with the same
// message shapes and the same callback-reactor pattern as the metasrv, but no
// work per request. The load generator drives both, so every throughput figure
// is a ratio measured in one run.
//
// --api=callback (the default) serves the stream with callback reactors, as
// the metasrv does; --api=cq with gRPC's completion-queue API instead: one
// queue and one polling thread per core, each stream a small state machine
// whose steps are the queue's tags (gRPC's fastest server API in 1.51).
//
// --api=h2 serves both on the metasrv's own HTTP/2 transport (nghttp2,
// server/rpc/h2_transport.h), with no work per request but parsing it: the
// physical limit of that transport.
//
// With --state_flows=N it also answers FlowState.GetFlowState with one
// GetFlowStateResponse of N flows, built and serialized once at start-up:
// the bare cost of sending a reply of that size (the baseline of the read
// bench).
//   echo_server --bind_addr=127.0.0.1:3102 [--api=cq] [--state_flows=100000]
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "server/ops/tcp_listener.h"
#include "server/rpc/h2_transport.h"
#include "greptime/v1/meta/heartbeat.grpc.pb.h"
#include "metasrv/v1/metasrv.grpc.pb.h"

ABSL_FLAG(std::string, bind_addr, "127.0.0.1:3102", "host:port to serve on");
ABSL_FLAG(std::string, api, "callback",
          "callback (reactors), cq (completion queues, a thread per core) or "
          "h2 (the metasrv's nghttp2 transport, a loop per core)");
ABSL_FLAG(int, state_flows, 0,
          "answer GetFlowState with a fixed reply of this many flows");

namespace {

namespace meta = greptime::v1::meta;

// What every echo sends back for a request (the same for both APIs).
void EchoReply(bool first, meta::HeartbeatResponse* response) {
  response->Clear();
  response->mutable_header()->set_protocol_version(1);
  if (first)
    response->mutable_heartbeat_config()->set_heartbeat_interval_ms(3000);
}

class EchoStream final
    : public grpc::ServerBidiReactor<meta::HeartbeatRequest,
                                     meta::HeartbeatResponse> {
 public:
  EchoStream() { StartRead(&request_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    EchoReply(first_, &response_);
    first_ = false;
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::CANCELLED);
      return;
    }
    StartRead(&request_);
  }
  void OnDone() override { delete this; }

 private:
  meta::HeartbeatRequest request_;
  meta::HeartbeatResponse response_;
  bool first_ = true;
};

// One stream on the completion-queue API. Each step is a tag on its queue;
// only that queue's thread runs it, so it needs no lock.
class CqStream {
 public:
  // A step of the stream, and the tag gRPC hands back when it completes.
  struct Tag {
    CqStream* stream;
    enum Kind { kAccepted, kRead, kWritten, kFinished } kind;
  };

  CqStream(meta::Heartbeat::AsyncService* service,
           grpc::ServerCompletionQueue* cq)
      : service_(service), cq_(cq), stream_(&context_) {
    service_->RequestHeartbeat(&context_, &stream_, cq_, cq_, &accepted_);
  }

  void Step(Tag::Kind kind, bool ok) {
    switch (kind) {
      case Tag::kAccepted:
        if (!ok) {  // Shutting down.
          delete this;
          return;
        }
        new CqStream(service_, cq_);  // The next call.
        stream_.Read(&request_, &read_);
        return;
      case Tag::kRead:
        if (!ok) {
          stream_.Finish(grpc::Status::OK, &finished_);
          return;
        }
        EchoReply(first_, &response_);
        first_ = false;
        stream_.Write(response_, &written_);
        return;
      case Tag::kWritten:
        if (!ok) {
          stream_.Finish(grpc::Status::CANCELLED, &finished_);
          return;
        }
        stream_.Read(&request_, &read_);
        return;
      case Tag::kFinished:
        delete this;
        return;
    }
  }

 private:
  meta::Heartbeat::AsyncService* const service_;  // Where calls come from.
  grpc::ServerCompletionQueue* const cq_;         // Its queue.
  grpc::ServerContext context_;
  grpc::ServerAsyncReaderWriter<meta::HeartbeatResponse, meta::HeartbeatRequest>
      stream_;
  meta::HeartbeatRequest request_;
  meta::HeartbeatResponse response_;
  bool first_ = true;
  Tag accepted_{this, Tag::kAccepted}, read_{this, Tag::kRead},
      written_{this, Tag::kWritten}, finished_{this, Tag::kFinished};
};

// Polls `cq` until it is shut down and drained.
void PollQueue(grpc::ServerCompletionQueue* cq) {
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) {
    auto* step = static_cast<CqStream::Tag*>(tag);
    step->stream->Step(step->kind, ok);
  }
}

class EchoService final : public meta::Heartbeat::CallbackService {
  grpc::ServerBidiReactor<meta::HeartbeatRequest, meta::HeartbeatResponse>*
  Heartbeat(grpc::CallbackServerContext*) override {
    return new EchoStream();
  }
};

// A GetFlowStateResponse of `flows` flows with the values the read bench's
// fill leaves in the metasrv (loadgen's one report per node: size 1025,
// executed at 1 ms), so that both replies are of the same size (the bench
// prints both); serialized.
std::string FixedStateReply(int flows) {
  metasrv::v1::GetFlowStateResponse reply;
  reply.set_found(true);
  for (int id = 0; id < flows; ++id) {
    reply.add_flow_ids(id);
    reply.add_fields(3);
    reply.add_state_sizes(1025);
    reply.add_last_exec_times_ms(1);
    reply.add_start_times_ms(0);
  }
  return reply.SerializeAsString();
}

// GetFlowState answered with the same serialized bytes every time.
class FixedStateService final
    : public metasrv::v1::FlowState::WithRawCallbackMethod_GetFlowState<
          metasrv::v1::FlowState::Service> {
 public:
  explicit FixedStateService(int flows) {
    const std::string bytes = FixedStateReply(flows);
    grpc::Slice slice(bytes);
    reply_ = grpc::ByteBuffer(&slice, 1);
    std::fprintf(stderr, "GetFlowState reply: %zu bytes\n", bytes.size());
  }
  grpc::ServerUnaryReactor* GetFlowState(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer*,
                                         grpc::ByteBuffer* response) override {
    *response = reply_;  // Shares the slice: no copy.
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  grpc::ByteBuffer reply_;  // The reply, serialized once.
};

// The echo on the nghttp2 transport: each call an H2EchoCall.
class H2EchoCall final : public metasrv::server::CallEvents {
 public:
  explicit H2EchoCall(std::shared_ptr<const std::string> state)
      : state_(std::move(state)) {}
  void OnMessage(metasrv::server::H2Call* call, metasrv::server::Compression,
                 std::string message) override {
    if (state_ != nullptr) {
      call->Send(state_);
      call->Next();
      return;
    }
    request_.ParseFromString(message);
    EchoReply(first_, &response_);
    first_ = false;
    call->Send(std::make_shared<const std::string>(
        response_.SerializeAsString()));
    call->Next();
  }
  void OnHalfClose(metasrv::server::H2Call* call) override {
    call->Finish(0, "");
  }
  void OnClosed(metasrv::server::H2Call*) override { delete this; }

 private:
  const std::shared_ptr<const std::string> state_;  // GetFlowState's reply.
  meta::HeartbeatRequest request_;
  meta::HeartbeatResponse response_;
  bool first_ = true;
};

// Takes each call: a Heartbeat stream or GetFlowState, else UNIMPLEMENTED.
class H2Echo final : public metasrv::server::CallSink {
 public:
  explicit H2Echo(int flows) {
    if (flows > 0) {
      state_ = std::make_shared<const std::string>(FixedStateReply(flows));
    }
  }
  void OnCall(metasrv::server::H2Call* call,
              const metasrv::server::PeerAddress&) override {
    const std::string& path = call->head().path;
    if (path == "/greptime.v1.meta.Heartbeat/Heartbeat") {
      call->set_events(new H2EchoCall(nullptr));
    } else if (state_ != nullptr &&
               path == "/metasrv.v1.FlowState/GetFlowState") {
      call->set_events(new H2EchoCall(state_));
    } else {
      call->Finish(12, "unknown method");
      return;
    }
    call->Next();
  }

 private:
  std::shared_ptr<const std::string> state_;  // Null without --state_flows.
};

// Serves until SIGINT or SIGTERM (blocked by the caller).
int ServeH2(const std::string& addr, int flows) {
  H2Echo echo(flows);
  metasrv::server::H2TransportOptions options;
  options.threads =
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  metasrv::server::H2Transport transport(options, &echo);
  auto listener = metasrv::server::TcpListener::Listen(addr);
  if (!listener.ok()) {
    std::fprintf(stderr, "cannot listen on %s\n", addr.c_str());
    return 1;
  }
  transport.Start(*std::move(listener));
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  int sig = 0;
  sigwait(&stop, &sig);
  transport.Stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  if (absl::GetFlag(FLAGS_api) == "h2") {
    return ServeH2(absl::GetFlag(FLAGS_bind_addr),
                   absl::GetFlag(FLAGS_state_flows));
  }
  const bool cq_api = absl::GetFlag(FLAGS_api) == "cq";
  if (!cq_api && absl::GetFlag(FLAGS_api) != "callback") {
    std::fprintf(stderr, "--api is callback, cq or h2\n");
    return 2;
  }
  EchoService service;
  meta::Heartbeat::AsyncService async_service;
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int port = 0;
  builder.AddListeningPort(absl::GetFlag(FLAGS_bind_addr),
                           grpc::InsecureServerCredentials(), &port);
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues;
  if (cq_api) {
    builder.RegisterService(&async_service);
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < cores; ++i)
      queues.push_back(builder.AddCompletionQueue());
  } else {
    builder.RegisterService(&service);
  }
  std::unique_ptr<FixedStateService> state;
  if (absl::GetFlag(FLAGS_state_flows) > 0) {
    state =
        std::make_unique<FixedStateService>(absl::GetFlag(FLAGS_state_flows));
    builder.RegisterService(state.get());
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "cannot listen on %s\n",
                 absl::GetFlag(FLAGS_bind_addr).c_str());
    return 1;
  }
  std::vector<std::thread> pollers;
  for (auto& cq : queues) {
    // A few calls waiting per queue; each accepted call asks for the next.
    for (int i = 0; i < 4; ++i) new CqStream(&async_service, cq.get());
    pollers.emplace_back(PollQueue, cq.get());
  }
  int sig = 0;
  sigwait(&stop, &sig);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  for (auto& cq : queues) cq->Shutdown();
  for (auto& t : pollers) t.join();
  return 0;
}
