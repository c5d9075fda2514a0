#include "tests/server/etcd_process.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "etcd/rpc.grpc.pb.h"
#include "gtest/gtest.h"

namespace metasrv::testing {
namespace {

// Whether etcd answers a read: it is up and has a leader. (With auth on,
// an unauthenticated read is refused, which is an answer too.)
bool Answers(const std::string& endpoint,
             const std::shared_ptr<grpc::ChannelCredentials>& creds) {
  if (!AcceptsTcp(endpoint)) return false;
  auto stub = etcdserverpb::KV::NewStub(grpc::CreateChannel(endpoint, creds));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
  etcdserverpb::RangeRequest req;
  req.set_key("probe");
  etcdserverpb::RangeResponse resp;
  const grpc::Status s = stub->Range(&ctx, req, &resp);
  return s.ok() || s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
         s.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
         s.error_code() == grpc::StatusCode::UNAUTHENTICATED;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

EtcdProcess::EtcdProcess(Options options) : options_(std::move(options)) {
  char dir[] = "/tmp/metasrv-etcd-XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed";
    return;
  }
  data_dir_ = dir;
  if (!options_.jwt_ttl.empty()) {
    const std::string key = data_dir_ + "/jwt.key";
    const std::string pub = data_dir_ + "/jwt.pub";
    EXPECT_TRUE(RunCommand({"/usr/bin/openssl", "genrsa", "-out", key, "2048"},
                           absl::Seconds(30)));
    EXPECT_TRUE(RunCommand(
        {"/usr/bin/openssl", "rsa", "-in", key, "-pubout", "-out", pub},
        absl::Seconds(30)));
    options_.extra_args.push_back(
        absl::StrCat("--auth-token=jwt,pub-key=", pub, ",priv-key=", key,
                     ",sign-method=RS256,ttl=", options_.jwt_ttl));
  }
  // A port FreePort picked can be taken by another test before etcd binds
  // it; etcd then exits at once, and new ports are tried.
  bool up = false;
  for (int attempt = 0; attempt < 3 && !up; ++attempt) {
    endpoint_ = absl::StrCat("127.0.0.1:", FreePort());
    peer_url_ = absl::StrCat("http://127.0.0.1:", FreePort());
    up = Launch();
  }
  EXPECT_TRUE(up) << "etcd exited at start three times";
  if (!options_.root_password.empty()) {
    EXPECT_TRUE(Etcdctl({"user", "add", "root:" + options_.root_password}));
    EXPECT_TRUE(Etcdctl({"auth", "enable"}));
  }
}

std::shared_ptr<grpc::ChannelCredentials> EtcdProcess::Credentials() const {
  if (options_.cert.empty()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadAll(options_.ca);
  if (options_.client_cert_auth) {
    ssl.pem_cert_chain = ReadAll(options_.client_cert);
    ssl.pem_private_key = ReadAll(options_.client_key);
  }
  return grpc::SslCredentials(ssl);
}

bool EtcdProcess::ChangeRootPassword(const std::string& old_password,
                                     const std::string& new_password) {
  // etcdctl reads a new password from its standard input.
  return RunCommand(
      {"/bin/sh", "-c",
       absl::StrCat("echo '", new_password,
                    "' | ETCDCTL_API=3 /usr/bin/etcdctl --endpoints=http://",
                    endpoint_, " --user='root:", old_password,
                    "' user passwd root --interactive=false")},
      absl::Seconds(20));
}

bool EtcdProcess::Etcdctl(const std::vector<std::string>& args) {
  const bool tls = !options_.cert.empty();
  std::vector<std::string> argv = {
      "/usr/bin/env", "ETCDCTL_API=3", "/usr/bin/etcdctl",
      absl::StrCat("--endpoints=", tls ? "https://" : "http://", endpoint_)};
  if (tls) argv.push_back("--cacert=" + options_.ca);
  if (tls && options_.client_cert_auth) {
    argv.push_back("--cert=" + options_.client_cert);
    argv.push_back("--key=" + options_.client_key);
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, absl::Seconds(20));
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
  EXPECT_TRUE(Launch()) << "etcd exited at start on " << endpoint_;
}

bool EtcdProcess::Launch() {
  const bool tls = !options_.cert.empty();
  const std::string client_url = (tls ? "https://" : "http://") + endpoint_;
  std::vector<std::string> argv = {"/usr/bin/etcd",
                                   "--name=test",
                                   "--data-dir=" + data_dir_,
                                   "--listen-client-urls=" + client_url,
                                   "--advertise-client-urls=" + client_url,
                                   "--listen-peer-urls=" + peer_url_,
                                   "--initial-advertise-peer-urls=" + peer_url_,
                                   "--initial-cluster=test=" + peer_url_,
                                   "--logger=zap",
                                   "--log-level=error"};
  if (tls) {
    argv.push_back("--cert-file=" + options_.cert);
    argv.push_back("--key-file=" + options_.key);
    if (options_.client_cert_auth) {
      argv.push_back("--client-cert-auth");
      argv.push_back("--trusted-ca-file=" + options_.ca);
    }
  }
  argv.insert(argv.end(), options_.extra_args.begin(),
              options_.extra_args.end());
  process_ = std::make_unique<ChildProcess>(argv);
  const auto creds = Credentials();
  bool exited = false;
  const bool answered = WaitFor(
      [&] {
        exited = process_->Wait(absl::ZeroDuration()).has_value();
        return exited || Answers(endpoint_, creds);
      },
      absl::Seconds(30));
  if (exited) {
    process_.reset();
    return false;
  }
  EXPECT_TRUE(answered) << "etcd did not come up on " << endpoint_;
  return true;
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
  if (process_ == nullptr) return;
  process_->Signal(SIGSTOP);
  WaitUntilStopped({process_->pid()});
}

void EtcdProcess::Resume() {
  if (process_ != nullptr) process_->Signal(SIGCONT);
}

}  // namespace metasrv::testing
