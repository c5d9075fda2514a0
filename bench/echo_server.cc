// The baseline: a bare gRPC bidi echo of the Heartbeat service, with the same
// message shapes and the same callback-reactor pattern as the metasrv, but no
// work per request. The load generator drives both, so every throughput figure
// is a ratio measured in one run.
//
// With --state_flows=N it also answers FlowState.GetFlowState with one
// GetFlowStateResponse of N flows, built and serialized once at start-up:
// the bare cost of sending a reply of that size (the baseline of the read
// bench).
//   echo_server --bind_addr=127.0.0.1:3102 [--state_flows=100000]
#include <csignal>
#include <cstdio>
#include <memory>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "greptime/v1/meta/heartbeat.grpc.pb.h"
#include "metasrv/v1/metasrv.grpc.pb.h"

ABSL_FLAG(std::string, bind_addr, "127.0.0.1:3102", "host:port to serve on");
ABSL_FLAG(int, state_flows, 0,
          "answer GetFlowState with a fixed reply of this many flows");

namespace {

namespace meta = greptime::v1::meta;

class EchoStream final
    : public grpc::ServerBidiReactor<meta::HeartbeatRequest, meta::HeartbeatResponse> {
 public:
  EchoStream() { StartRead(&request_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    response_.Clear();
    response_.mutable_header()->set_protocol_version(1);
    if (first_) {
      response_.mutable_heartbeat_config()->set_heartbeat_interval_ms(3000);
      first_ = false;
    }
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

class EchoService final : public meta::Heartbeat::CallbackService {
  grpc::ServerBidiReactor<meta::HeartbeatRequest, meta::HeartbeatResponse>* Heartbeat(
      grpc::CallbackServerContext*) override {
    return new EchoStream();
  }
};

// GetFlowState answered with the same serialized bytes every time.
class FixedStateService final
    : public metasrv::v1::FlowState::WithRawCallbackMethod_GetFlowState<
          metasrv::v1::FlowState::Service> {
 public:
  // A reply of `flows` flows with values like the load generator's reports.
  explicit FixedStateService(int flows) {
    metasrv::v1::GetFlowStateResponse reply;
    reply.set_found(true);
    for (int id = 0; id < flows; ++id) {
      reply.add_flow_ids(id);
      reply.add_fields(3);
      reply.add_state_sizes(1000 + id % 4096);
      reply.add_last_exec_times_ms(1700000000000 + id % 1000);
      reply.add_start_times_ms(0);
    }
    const std::string bytes = reply.SerializeAsString();
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

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  EchoService service;
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int port = 0;
  builder.AddListeningPort(absl::GetFlag(FLAGS_bind_addr),
                           grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<FixedStateService> state;
  if (absl::GetFlag(FLAGS_state_flows) > 0) {
    state = std::make_unique<FixedStateService>(absl::GetFlag(FLAGS_state_flows));
    builder.RegisterService(state.get());
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "cannot listen on %s\n", absl::GetFlag(FLAGS_bind_addr).c_str());
    return 1;
  }
  int sig = 0;
  sigwait(&stop, &sig);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return 0;
}
