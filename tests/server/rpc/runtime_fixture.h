// A gRPC server on loopback whose every call goes through the server's own
// runtime (a CallDispatcher and a CqPoller), for tests of the runtime and
// its call shapes.
#ifndef METASRV_TESTS_SERVER_RPC_RUNTIME_FIXTURE_H_
#define METASRV_TESTS_SERVER_RPC_RUNTIME_FIXTURE_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "core/leadership.h"
#include "gtest/gtest.h"
#include "metasrv/v1/metasrv.pb.h"
#include "prometheus/registry.h"
#include "server/rpc/call_dispatcher.h"
#include "server/rpc/call_door.h"
#include "server/rpc/cq_poller.h"

namespace metasrv::server {

// Who leads, as a test says.
class TestLeadership final : public core::Leadership {
 public:
  Term CurrentTerm() const override { return term; }
  std::string LeaderAddr() const override { return leader; }
  std::vector<std::string> FollowerAddrs() const override { return {}; }
  Term term;
  std::string leader;
};

// A small request and answer: any message will do.
using SmallRequest = metasrv::v1::ForgetFlowsRequest;
using SmallResponse = metasrv::v1::ForgetFlowsResponse;

// A gRPC server on loopback whose every call goes through a CallDispatcher
// and a CqPoller, as the metasrv's do; methods are added before Start().
class Runtime {
 public:
  // Calls pass through `door` (null: none; the runtime alone).
  explicit Runtime(CqPoller::Options options = {}, CallDoor* door = nullptr)
      : metrics_(&registry_), dispatcher_(&metrics_, door), options_(options) {}
  ~Runtime() { Stop(); }

  CallDispatcher& dispatcher() { return dispatcher_; }
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  // Where it listens ("127.0.0.1:port").
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  CqPoller& poller() { return *poller_; }

  void Start() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterAsyncGenericService(dispatcher_.service());
    std::unique_ptr<grpc::ServerCompletionQueue> cq =
        builder.AddCompletionQueue();
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    poller_ = std::make_unique<CqPoller>(std::move(cq), options_);
    poller_->Start();
    dispatcher_.Start(poller_->cq());
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_),
                                   grpc::InsecureChannelCredentials());
  }

  void Stop() {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(100));
    calls_ended_ = dispatcher_.WaitForCalls(absl::Now() + absl::Seconds(10));
    poller_->Stop();
    server_.reset();
  }
  bool calls_ended() const { return calls_ended_; }

  // Calls `method` with `request`; the status, and the answer in `*out`.
  grpc::Status Unary(const std::string& method, const SmallRequest& request,
                     SmallResponse* out,
                     absl::Duration deadline = absl::Seconds(10)) {
    grpc::GenericStub stub(channel_);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         absl::ToChronoMilliseconds(deadline));
    const std::string bytes = request.SerializeAsString();
    grpc::Slice slice(bytes);
    grpc::ByteBuffer sent(&slice, 1);
    grpc::ByteBuffer received;
    absl::Notification done;
    grpc::Status status;
    stub.UnaryCall(&context, method, grpc::StubOptions(), &sent, &received,
                   [&](grpc::Status s) {
                     status = std::move(s);
                     done.Notify();
                   });
    done.WaitForNotification();
    if (status.ok() && out != nullptr) {
      std::vector<grpc::Slice> slices;
      EXPECT_TRUE(received.Dump(&slices).ok());
      std::string answer;
      for (const grpc::Slice& s : slices) {
        answer.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
      EXPECT_TRUE(out->ParseFromString(answer));
    }
    return status;
  }

  // grpc_server_handled_total of `method` with `code` ("OK", "Canceled"...).
  double Handled(const std::string& service, const std::string& method,
                 const std::string& code) {
    for (const auto& family : registry_.Collect()) {
      if (family.name != "grpc_server_handled_total") continue;
      for (const auto& metric : family.metric) {
        std::map<std::string, std::string> labels;
        for (const auto& l : metric.label) labels[l.name] = l.value;
        if (labels["grpc_service"] == service &&
            labels["grpc_method"] == method && labels["grpc_code"] == code) {
          return metric.counter.value;
        }
      }
    }
    return -1;
  }

 private:
  prometheus::Registry registry_;
  CallMetrics metrics_;
  CallDispatcher dispatcher_;
  const CqPoller::Options options_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<CqPoller> poller_;
  std::shared_ptr<grpc::Channel> channel_;
  bool calls_ended_ = false;
};

}  // namespace metasrv::server

#endif  // METASRV_TESTS_SERVER_RPC_RUNTIME_FIXTURE_H_
