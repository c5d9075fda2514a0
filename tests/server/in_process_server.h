// A test fixture with an in-process metasrv on a free loopback port.
#ifndef METASRV_TESTS_SERVER_IN_PROCESS_SERVER_H_
#define METASRV_TESTS_SERVER_IN_PROCESS_SERVER_H_

#include <memory>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/metasrv_server.h"
#include "tests/server/test_util.h"

namespace metasrv::testing {

// Default options of a test server: gRPC on a free loopback port, no
// metrics port (a test that wants one sets "127.0.0.1:0").
inline server::ServerOptions LoopbackOptions() {
  server::ServerOptions options;
  options.bind_addr = "127.0.0.1:0";
  options.metrics_addr = "";
  // Every scrape built afresh: a test scrapes right after a change, and an
  // exposition slow to build under ASan or on a loaded machine would
  // otherwise be served again (a clean-clone .ci/run read stale counts so).
  options.metrics_reuse_threshold = absl::ZeroDuration();
  return options;
}

// Starts a metasrv with `options` on a free loopback port; null (and a test
// failure) if it cannot start.
inline std::unique_ptr<server::MetasrvServer> StartInProcess(
    server::ServerOptions options) {
  options.bind_addr = "127.0.0.1:0";
  auto started = server::MetasrvServer::Start(options);
  EXPECT_TRUE(started.ok()) << started.status();
  return started.ok() ? *std::move(started) : nullptr;
}

class InProcessServerTest : public ::testing::Test {
 protected:
  // Options to start with; tests may override.
  virtual server::ServerOptions Options() { return LoopbackOptions(); }

  void SetUp() override {
    auto started = server::MetasrvServer::Start(Options());
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = *std::move(started);
    channel_ = Connect(server_->advertised_addr());
  }

  // The server stops here, while what a derived fixture lent it (a manual
  // clock) still lives: members of a derived class die before ours.
  void TearDown() override {
    channel_.reset();
    server_.reset();
  }

  std::unique_ptr<server::MetasrvServer> server_;  // The server.
  std::shared_ptr<grpc::Channel> channel_;         // A channel to it.
};

}  // namespace metasrv::testing

#endif  // METASRV_TESTS_SERVER_IN_PROCESS_SERVER_H_
