// A server on the nghttp2 transport for its tests: a sink that answers by
// path, and a fixture that serves it on 127.0.0.1 with gRPC's client ready.
#ifndef METASRV_TESTS_SERVER_RPC_H2_FIXTURE_H_
#define METASRV_TESTS_SERVER_RPC_H2_FIXTURE_H_

#include "server/rpc/h2_transport.h"

#include <arpa/inet.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/ops/tcp_listener.h"

namespace metasrv::server {

// Answers by path: Echo (each message back, OK at the client's end), Fail
// (NOT_FOUND at once), Silent (never answers), Big (64 KiB per message).
class TestSink final : public CallSink {
 public:
  std::atomic<int> calls{0}, messages{0}, closed{0};
  // The compression the transport gave the last message.
  std::atomic<Compression> last_compression{Compression::kNone};
  std::atomic<H2Call*> silent{nullptr};

  void OnCall(H2Call* call, const PeerAddress& peer) override {
    ++calls;
    last_peer = peer.text;
    const std::string& path = call->head().path;
    if (path == "/t.T/Fail") {
      call->Finish(5, "n\xc3\xb6 100%", {{"x-extra", "yes"}});
      return;
    }
    call->set_events(new Events(this, path));
    call->Next();
  }
  std::string last_peer;  // Loop thread; read after a call returned.

 private:
  class Events final : public CallEvents {
   public:
    Events(TestSink* sink, std::string path)
        : sink_(sink), path_(std::move(path)) {}
    void OnMessage(H2Call* call, Compression compression,
                   std::string message) override {
      ++sink_->messages;
      sink_->last_compression = compression;
      if (path_ == "/t.T/Silent") {
        sink_->silent = call;
        return;
      }
      if (path_ == "/t.T/Big") message = std::string(64 << 10, 'b');
      call->Send(std::make_shared<const std::string>(std::move(message)));
      call->Next();
    }
    void OnHalfClose(H2Call* call) override {
      if (path_ != "/t.T/Silent") call->Finish(0, "");
    }
    void OnClosed(H2Call* call) override {
      if (sink_->silent == call) sink_->silent = nullptr;
      ++sink_->closed;
      delete this;
    }

   private:
    TestSink* const sink_;
    const std::string path_;
  };
};

inline bool WaitFor(const std::function<bool()>& done,
             absl::Duration limit = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + limit;
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return done();
}

class H2TransportTest : public ::testing::Test {
 protected:
  void Serve(H2TransportOptions options) {
    absl::StatusOr<std::unique_ptr<TcpListener>> listener =
        TcpListener::Listen("127.0.0.1:0");
    ASSERT_TRUE(listener.ok()) << listener.status();
    port_ = (*listener)->port();
    transport_ = std::make_unique<H2Transport>(options, &sink_);
    transport_->Start(*std::move(listener));
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_),
                                   grpc::InsecureChannelCredentials());
  }
  void TearDown() override {
    if (transport_) transport_->Stop();
  }

  // A unary call through gRPC's generic stub.
  grpc::Status Unary(const std::string& method, const std::string& request,
                     std::string* reply, grpc::ClientContext* context) {
    grpc::GenericStub stub(channel_);
    grpc::CompletionQueue cq;
    grpc::Slice slice(request);
    grpc::ByteBuffer in(&slice, 1);
    auto call = stub.PrepareUnaryCall(context, method, in, &cq);
    call->StartCall();
    grpc::ByteBuffer out;
    grpc::Status status;
    call->Finish(&out, &status, reinterpret_cast<void*>(1));
    void* tag = nullptr;
    bool ok = false;
    EXPECT_TRUE(cq.Next(&tag, &ok));
    std::vector<grpc::Slice> slices;
    if (status.ok() && out.Dump(&slices).ok()) {
      reply->clear();
      for (const auto& s : slices) reply->append(s.begin(), s.end());
    }
    return status;
  }
  int port() const { return port_; }

  TestSink sink_;
  std::unique_ptr<H2Transport> transport_;
  int port_ = 0;  // Where it listens.
  std::shared_ptr<grpc::Channel> channel_;
};

}  // namespace metasrv::server

#endif  // METASRV_TESTS_SERVER_RPC_H2_FIXTURE_H_
