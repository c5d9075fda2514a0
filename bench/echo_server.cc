// The baseline: a bare gRPC bidi echo of the Heartbeat service, with the same
// message shapes and the same callback-reactor pattern as the metasrv, but no
// work per request. The load generator drives both, so every throughput figure
// is a ratio measured in one run.
//   echo_server --bind_addr=127.0.0.1:3102
#include <csignal>
#include <cstdio>
#include <memory>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "greptime/v1/meta/heartbeat.grpc.pb.h"

ABSL_FLAG(std::string, bind_addr, "127.0.0.1:3102", "host:port to serve on");

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
