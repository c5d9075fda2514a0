#include "tests/server/etcd_process.h"

#include <signal.h>
#include <stdlib.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "etcd/rpc.grpc.pb.h"
#include "gtest/gtest.h"

namespace metasrv::testing {
namespace {

// Whether etcd grants a lease: it is up and has a leader.
bool Answers(const std::string& endpoint) {
  if (!AcceptsTcp(endpoint)) return false;
  auto stub = etcdserverpb::Lease::NewStub(Connect(endpoint));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
  etcdserverpb::LeaseGrantRequest req;
  req.set_ttl(5);
  etcdserverpb::LeaseGrantResponse resp;
  return stub->LeaseGrant(&ctx, req, &resp).ok();
}

}  // namespace

EtcdProcess::EtcdProcess() {
  char dir[] = "/tmp/metasrv-etcd-XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed";
    return;
  }
  data_dir_ = dir;
  endpoint_ = absl::StrCat("127.0.0.1:", FreePort());
  peer_url_ = absl::StrCat("http://127.0.0.1:", FreePort());
  Start();
}

EtcdProcess::~EtcdProcess() {
  if (process_ != nullptr) Resume();
  Stop();
  if (!data_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(data_dir_, ignored);
  }
}

void EtcdProcess::Start() {
  const std::string client_url = "http://" + endpoint_;
  process_ = std::make_unique<ChildProcess>(std::vector<std::string>{
      "/usr/bin/etcd", "--name=test", "--data-dir=" + data_dir_,
      "--listen-client-urls=" + client_url,
      "--advertise-client-urls=" + client_url,
      "--listen-peer-urls=" + peer_url_,
      "--initial-advertise-peer-urls=" + peer_url_,
      "--initial-cluster=test=" + peer_url_, "--logger=zap", "--log-level=error"});
  EXPECT_TRUE(WaitFor([&] { return Answers(endpoint_); }, absl::Seconds(30)))
      << "etcd did not come up on " << endpoint_;
}

void EtcdProcess::Stop() {
  if (process_ == nullptr) return;
  process_->Signal(SIGTERM);
  if (!process_->Wait(absl::Seconds(10)).has_value()) {
    process_->Signal(SIGKILL);
    process_->Wait(absl::Seconds(10));
  }
  process_.reset();
}

void EtcdProcess::Pause() {
  if (process_ != nullptr) process_->Signal(SIGSTOP);
}

void EtcdProcess::Resume() {
  if (process_ != nullptr) process_->Signal(SIGCONT);
}

}  // namespace metasrv::testing
