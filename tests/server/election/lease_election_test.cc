// LeaseElection against an in-memory LeaseStore on a manual clock: who a
// follower names, and when it asks the store, without a database or sleeps.
#include "server/election/lease_election.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using ::metasrv::testing::WaitFor;

// A lease table in memory. The test thread scripts it; the election's
// session thread calls it.
class FakeLeaseStore final : public LeaseStore {
 public:
  // Shared with the test: the store itself is owned by the election.
  struct Table {
    absl::Mutex mu;
    std::string leader_holder ABSL_GUARDED_BY(mu);  // "": no leader row.
    std::string leader_value ABSL_GUARDED_BY(mu);
    // The leader row exists but a Scan does not see it (a read that raced
    // the row's write).
    bool hide_leader ABSL_GUARDED_BY(mu) = false;
    bool down ABSL_GUARDED_BY(mu) = false;  // Every call: kUnavailable.
    int scans ABSL_GUARDED_BY(mu) = 0;      // Scans answered.
  };

  explicit FakeLeaseStore(Table* table) : table_(table) {}

  absl::Status Open(absl::Duration) override { return Down(); }
  absl::StatusOr<bool> Acquire(const std::string&, const std::string& holder,
                               const std::string& value, absl::Duration,
                               absl::Duration) override {
    absl::MutexLock lock(&table_->mu);
    if (table_->down) return absl::UnavailableError("store down");
    if (!table_->leader_holder.empty() && table_->leader_holder != holder) {
      return false;
    }
    table_->leader_holder = holder;
    table_->leader_value = value;
    return true;
  }
  absl::Status Put(const std::string&, const std::string&, const std::string&,
                   absl::Duration, absl::Duration) override {
    return Down();
  }
  absl::Status Release(const std::string&, const std::string& holder,
                       absl::Duration) override {
    absl::MutexLock lock(&table_->mu);
    if (table_->down) return absl::UnavailableError("store down");
    if (table_->leader_holder == holder) table_->leader_holder.clear();
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<Entry>> Scan(const std::string& prefix,
                                          absl::Duration) override {
    absl::MutexLock lock(&table_->mu);
    if (table_->down) return absl::UnavailableError("store down");
    ++table_->scans;
    std::vector<Entry> rows;
    if (!table_->leader_holder.empty() && !table_->hide_leader) {
      rows.push_back(
          {prefix + "leader", table_->leader_value, absl::Seconds(30)});
    }
    return rows;
  }
  void Close() override {}
  void SetPassword(std::string) override {}

 private:
  absl::Status Down() {
    absl::MutexLock lock(&table_->mu);
    return table_->down ? absl::UnavailableError("store down")
                        : absl::OkStatus();
  }

  Table* const table_;  // Borrowed from the test.
};

class CountingListener final : public core::LeadershipListener {
 public:
  uint64_t OnBecomeLeader() override { return 1; }
  uint64_t OnStepDown() override { return 0; }
};

class LeaseElectionTest : public ::testing::Test {
 protected:
  // A follower: another holder ("10.0.0.9:3002") has the leader row.
  void StartFollower(absl::Duration ttl) {
    {
      absl::MutexLock lock(&table_.mu);
      table_.leader_holder = "other";
      table_.leader_value = "10.0.0.9:3002";
    }
    LeaseElectionOptions options;
    options.store_name = "fake";
    options.name = "__metasrv_election";
    options.self_addr = "10.0.0.1:3002";
    options.lease_ttl = ttl;
    election_ = std::make_unique<LeaseElection>(
        options, std::make_unique<FakeLeaseStore>(&table_), &clock_,
        &listener_);
    election_->Start();
  }
  int Scans() {
    absl::MutexLock lock(&table_.mu);
    return table_.scans;
  }
  void TearDown() override {
    if (election_ != nullptr) election_->Stop();
  }

  FakeLeaseStore::Table table_;
  core::ManualClock clock_;
  CountingListener listener_;
  std::unique_ptr<LeaseElection> election_;
};

TEST_F(LeaseElectionTest, AFollowerNamesTheLeaderItRead) {
  StartFollower(absl::Seconds(30));
  // The round takes what it read after its scan has returned: wait for
  // the name, not for the scan (under ASan the two were seen apart).
  ASSERT_TRUE(WaitFor(
      [&] { return election_->LeaderAddr() == "10.0.0.9:3002"; }));
  EXPECT_GE(Scans(), 1);
  EXPECT_FALSE(election_->CurrentTerm().leading);
}

// Issue 37, item 4: a follower whose last read found no leader row does not
// wait for its next round (10 s here, on a clock that does not move by
// itself) to learn of the new one: asked, it reads the store at once, as
// upstream's leader() does on every call.
TEST_F(LeaseElectionTest, AFollowerThatReadNoLeaderAsksTheStoreAtOnce) {
  {
    absl::MutexLock lock(&table_.mu);
    table_.hide_leader = true;
  }
  StartFollower(absl::Seconds(30));
  ASSERT_TRUE(WaitFor([&] { return Scans() >= 1; }));
  EXPECT_EQ(election_->LeaderAddr(), "");
  {
    absl::MutexLock lock(&table_.mu);
    table_.hide_leader = false;
  }
  // At most every eighth of a round (10 s / 8): not yet.
  clock_.Advance(absl::Seconds(2));
  EXPECT_TRUE(
      WaitFor([&] { return election_->LeaderAddr() == "10.0.0.9:3002"; },
              absl::Seconds(5)));
  EXPECT_EQ(Scans(), 2);
}

}  // namespace
}  // namespace metasrv::server
