// The etcd election's logic against a fake etcd whose answers the test
// holds back and orders: a campaign that wins on a lease etcd no longer has.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/leadership.h"
#include "etcd/election.grpc.pb.h"
#include "etcd/rpc.grpc.pb.h"
#include "gtest/gtest.h"
#include "server/election/etcd_election.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using ::metasrv::testing::WaitFor;

// Lease, KV and Election as the election uses them. A campaign is held
// until the test releases it; a lease the test kills is answered TTL 0.
class FakeEtcd final : public etcdserverpb::Lease::Service,
                       public etcdserverpb::KV::Service,
                       public v3electionpb::Election::Service {
 public:
  int64_t grants() {
    absl::MutexLock lock(&mu_);
    return next_lease_ - 1;
  }
  // The lease of the campaign waiting now; 0 when none waits.
  int64_t waiting() {
    absl::MutexLock lock(&mu_);
    return waiting_;
  }
  void Kill(int64_t lease) {
    absl::MutexLock lock(&mu_);
    dead_.insert(lease);
  }
  void Release(int64_t lease) {
    absl::MutexLock lock(&mu_);
    released_.insert(lease);
  }

  grpc::Status LeaseGrant(grpc::ServerContext*,
                          const etcdserverpb::LeaseGrantRequest* req,
                          etcdserverpb::LeaseGrantResponse* resp) override {
    absl::MutexLock lock(&mu_);
    resp->set_id(next_lease_++);
    resp->set_ttl(req->ttl());
    return grpc::Status::OK;
  }
  grpc::Status LeaseKeepAlive(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<etcdserverpb::LeaseKeepAliveResponse,
                               etcdserverpb::LeaseKeepAliveRequest>* stream)
      override {
    etcdserverpb::LeaseKeepAliveRequest req;
    while (stream->Read(&req)) {
      etcdserverpb::LeaseKeepAliveResponse resp;
      resp.set_id(req.id());
      {
        absl::MutexLock lock(&mu_);
        resp.set_ttl(dead_.contains(req.id()) ? 0 : 6);
      }
      stream->Write(resp);
    }
    return grpc::Status::OK;
  }
  grpc::Status LeaseRevoke(grpc::ServerContext*,
                           const etcdserverpb::LeaseRevokeRequest*,
                           etcdserverpb::LeaseRevokeResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status Range(grpc::ServerContext*, const etcdserverpb::RangeRequest*,
                     etcdserverpb::RangeResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status Put(grpc::ServerContext*, const etcdserverpb::PutRequest*,
                   etcdserverpb::PutResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status Campaign(grpc::ServerContext* ctx,
                        const v3electionpb::CampaignRequest* req,
                        v3electionpb::CampaignResponse* resp) override {
    absl::MutexLock lock(&mu_);
    waiting_ = req->lease();
    auto released = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return released_.contains(req->lease()) || ctx->IsCancelled();
    };
    while (!released()) mu_.AwaitWithTimeout(absl::Condition(&released),
                                             absl::Milliseconds(50));
    waiting_ = 0;
    if (ctx->IsCancelled()) return grpc::Status::CANCELLED;
    v3electionpb::LeaderKey* key = resp->mutable_leader();
    key->set_name(req->name());
    key->set_key(req->name() + "/" + std::to_string(req->lease()));
    key->set_lease(req->lease());
    return grpc::Status::OK;
  }
  grpc::Status Observe(
      grpc::ServerContext* ctx, const v3electionpb::LeaderRequest*,
      grpc::ServerWriter<v3electionpb::LeaderResponse>*) override {
    while (!ctx->IsCancelled()) absl::SleepFor(absl::Milliseconds(20));
    return grpc::Status::CANCELLED;
  }

 private:
  absl::Mutex mu_;
  int64_t next_lease_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t waiting_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_set<int64_t> dead_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int64_t> released_ ABSL_GUARDED_BY(mu_);
};

class CampaignListener final : public core::LeadershipListener {
 public:
  uint64_t OnBecomeLeader() override { return ++became_; }
  uint64_t OnStepDown() override {
    ++stepped_down_;
    return 0;
  }
  std::atomic<int> became_{0};
  std::atomic<int> stepped_down_{0};
};

// Issue 67: after a partition healed, replicas "became leader" and stepped
// down ("session ended") within milliseconds, each resetting its flow
// state: their campaigns returned after their leases had expired, before
// their keep-alive loops noticed. A won campaign now leads only once a
// keep-alive sent after the win finds the lease.
TEST(EtcdCampaignTest, ACampaignWonOnALeaseEtcdNoLongerHasNeverLeads) {
  FakeEtcd etcd;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(static_cast<etcdserverpb::Lease::Service*>(&etcd));
  builder.RegisterService(static_cast<etcdserverpb::KV::Service*>(&etcd));
  builder.RegisterService(
      static_cast<v3electionpb::Election::Service*>(&etcd));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);

  CampaignListener listener;
  EtcdElectionOptions options;
  options.endpoints = {"127.0.0.1:" + std::to_string(port)};
  options.name = "__metasrv_election";
  options.self_addr = "127.0.0.1:3002";
  options.lease_ttl = absl::Seconds(6);  // Keep-alives every 2 s.
  EtcdElection election(options, core::SystemClock(), &listener);
  election.Start();

  // The session's campaign waits; its lease dies (etcd expired it while
  // the replica could not reach it), then the campaign returns a win.
  ASSERT_TRUE(WaitFor([&] { return etcd.waiting() == 1; }));
  etcd.Kill(1);
  etcd.Release(1);
  // The session ends on the dead lease and a new one begins.
  ASSERT_TRUE(WaitFor([&] { return etcd.grants() == 2; }, absl::Seconds(10)));
  EXPECT_EQ(listener.became_.load(), 0) << "led on a dead session";
  EXPECT_EQ(listener.stepped_down_.load(), 0);

  // A live session's win leads.
  ASSERT_TRUE(WaitFor([&] { return etcd.waiting() == 2; }));
  etcd.Release(2);
  ASSERT_TRUE(WaitFor([&] { return listener.became_.load() == 1; }));
  EXPECT_TRUE(election.CurrentTerm().leading);
  election.Stop();
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
}

}  // namespace
}  // namespace metasrv::server
