// A gRPC server on loopback whose every call goes through the server's own
// runtime (a CallDispatcher on the nghttp2 transport), for tests of the
// runtime and its call shapes.
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
#include "server/ops/tcp_listener.h"
#include "server/rpc/call_dispatcher.h"
#include "server/rpc/call_door.h"
#include "server/rpc/h2_transport.h"

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
// on the nghttp2 transport, as the metasrv's do; methods are added before
// Start().
class Runtime {
 public:
  // Calls pass through `door` (null: an open one of its own, which admits
  // every call and bounds nothing: the runtime alone). Every write's
  // deadline is the door's --reply_stall_limit, as the metasrv sets it.
  explicit Runtime(CallDoor* door = nullptr)
      : metrics_(&registry_),
        open_door_(door != nullptr ? nullptr : OpenDoor(&leading_)),
        door_(door != nullptr ? door : open_door_.get()),
        dispatcher_(&metrics_, door_) {}
  ~Runtime() { Stop(); }

  CallDispatcher& dispatcher() { return dispatcher_; }
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  // Where it listens ("127.0.0.1:port").
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

  void Start() {
    absl::StatusOr<std::unique_ptr<TcpListener>> listener =
        TcpListener::Listen("127.0.0.1:0");
    ASSERT_TRUE(listener.ok()) << listener.status();
    port_ = (*listener)->port();
    H2TransportOptions options;
    options.threads = 2;
    options.limits.write_stall_limit = door_->options().reply_stall_limit;
    transport_ = std::make_unique<H2Transport>(options, &dispatcher_);
    transport_->Start(*std::move(listener));
    dispatcher_.SweepOn(transport_.get());
    channel_ = grpc::CreateChannel(address(),
                                   grpc::InsecureChannelCredentials());
  }

  // GOAWAY, the calls open given 100 ms, then every connection closed;
  // calls_ended() says whether every call ended within 10 s after.
  void Stop() {
    if (transport_ == nullptr) return;
    transport_->StopAccepting();
    transport_->Shutdown();
    dispatcher_.WaitForCalls(absl::Now() + absl::Milliseconds(100));
    transport_->Stop();
    calls_ended_ = dispatcher_.WaitForCalls(absl::Now() + absl::Seconds(10));
    transport_.reset();
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
  static std::unique_ptr<CallDoor> OpenDoor(TestLeadership* leading) {
    leading->term.leading = true;
    return std::make_unique<CallDoor>(leading, AdminAuth(), OpenDoorOptions(),
                                      core::SystemClock(), nullptr);
  }

  prometheus::Registry registry_;
  CallMetrics metrics_;
  TestLeadership leading_;               // The open door's: it leads.
  std::unique_ptr<CallDoor> open_door_;  // Without a door of the test's.
  CallDoor* const door_;                 // The test's, or open_door_.
  CallDispatcher dispatcher_;
  int port_ = 0;  // Where it listens.
  std::unique_ptr<H2Transport> transport_;
  std::shared_ptr<grpc::Channel> channel_;
  bool calls_ended_ = false;
};

}  // namespace metasrv::server

#endif  // METASRV_TESTS_SERVER_RPC_RUNTIME_FIXTURE_H_
