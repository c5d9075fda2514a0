// ReadExecutor: large reads never take every worker, a small read never
// waits behind a pile of large ones, full queues refuse, and the
// destructor runs what was queued.
#include "server/rpc/read_executor.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "tests/server/test_util.h"

namespace metasrv::server {
namespace {

using ::metasrv::testing::WaitFor;

// Work that blocks until released, counting how many run at once. Declared
// before the executor, it releases its work when it goes (a failed
// assertion must not leave the executor's destructor waiting forever).
class Gate {
 public:
  ~Gate() {
    if (!released_.HasBeenNotified()) released_.Notify();
  }
  std::function<void()> Work() {
    return [this] {
      running_.fetch_add(1);
      released_.WaitForNotification();
      running_.fetch_sub(1);
      done_.fetch_add(1);
    };
  }
  void Release() { released_.Notify(); }
  int running() const { return running_.load(); }
  int done() const { return done_.load(); }

 private:
  absl::Notification released_;
  std::atomic<int> running_{0}, done_{0};
};

TEST(ReadExecutorTest, LargeReadsLeaveAWorkerForSmallOnes) {
  Gate large;
  ReadExecutor executor({/*threads=*/2, /*max_queued_small=*/8,
                         /*max_queued_large=*/8});
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(executor.Schedule(ReadCost::kLarge, large.Work()).ok());
  }
  // One large read runs; the others wait, leaving a worker free.
  ASSERT_TRUE(WaitFor([&] { return large.running() == 1; }));
  EXPECT_EQ(executor.queued(ReadCost::kLarge), 3u);
  absl::Notification small_ran;
  ASSERT_TRUE(
      executor.Schedule(ReadCost::kSmall, [&] { small_ran.Notify(); }).ok());
  EXPECT_TRUE(small_ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(large.running(), 1);
  large.Release();
  EXPECT_TRUE(WaitFor([&] { return large.done() == 4; }));
}

TEST(ReadExecutorTest, AFullQueueRefusesAndDropsTheWork) {
  Gate gate;
  ReadExecutor executor({/*threads=*/2, /*max_queued_small=*/1,
                         /*max_queued_large=*/2});
  // Two workers: one large read runs (the other worker stays for small
  // ones), two wait; a third waiting large read is refused.
  ASSERT_TRUE(executor.Schedule(ReadCost::kLarge, gate.Work()).ok());
  ASSERT_TRUE(WaitFor([&] { return gate.running() == 1; }));
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(executor.Schedule(ReadCost::kLarge, gate.Work()).ok()) << i;
  }
  EXPECT_EQ(executor.queued(ReadCost::kLarge), 2u);
  std::atomic<bool> refused_ran{false};
  absl::Status refused =
      executor.Schedule(ReadCost::kLarge, [&] { refused_ran = true; });
  EXPECT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  // The small queue has its own bound: the free worker takes one, one
  // waits, the next is refused.
  ASSERT_TRUE(executor.Schedule(ReadCost::kSmall, gate.Work()).ok());
  ASSERT_TRUE(WaitFor([&] { return gate.running() == 2; }));
  ASSERT_TRUE(executor.Schedule(ReadCost::kSmall, gate.Work()).ok());
  EXPECT_TRUE(
      absl::IsResourceExhausted(executor.Schedule(ReadCost::kSmall, [] {})));
  gate.Release();
  EXPECT_TRUE(WaitFor([&] { return gate.done() == 5; }));
  EXPECT_FALSE(refused_ran.load());
}

// Hardening round 7: the large-read queue was one for all hosts, and a
// reset call kept its place until a worker skipped it: dead reads from one
// host refused others' reads. Now a cancelled call's place is given back at
// the bound, and a host under its share takes the place of the newest read
// of the host waiting with the most.
TEST(ReadExecutorTest, TheLargeQueueIsSharedByHostAndCancelledReadsLeaveIt) {
  Gate gate;
  ReadExecutor executor({/*threads=*/2, /*max_queued_small=*/1,
                         /*max_queued_large=*/4});
  ASSERT_TRUE(executor.Schedule(ReadCost::kLarge, gate.Work()).ok());
  ASSERT_TRUE(WaitFor([&] { return gate.running() == 1; }));
  int attacker_host = 0, honest_host = 0, third_host = 0;
  std::atomic<int> refused{0};
  auto owned = [&](const void* host, std::atomic<bool>* cancelled) {
    ReadExecutor::Owner owner;
    owner.host = host;
    owner.cancelled = [cancelled] { return cancelled->load(); };
    owner.refuse = [&refused](const absl::Status& status) {
      EXPECT_TRUE(absl::IsResourceExhausted(status)) << status;
      ++refused;
    };
    return owner;
  };
  // The attacker fills the queue, then resets two of its calls.
  std::atomic<bool> live{false}, reset{false};
  std::atomic<int> skipped{0};  // A cancelled call's work, run to end it.
  for (int i = 0; i < 4; ++i) {
    std::function<void()> work = gate.Work();
    if (i < 2) work = [&skipped] { ++skipped; };
    ASSERT_TRUE(executor
                    .Schedule(ReadCost::kLarge, std::move(work),
                              owned(&attacker_host, i < 2 ? &reset : &live))
                    .ok());
  }
  reset = true;
  // Their places go to the next reads, whoever's.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(executor
                    .Schedule(ReadCost::kLarge, gate.Work(),
                              owned(&attacker_host, &live))
                    .ok());
  }
  EXPECT_EQ(refused.load(), 0);
  EXPECT_EQ(skipped.load(), 2);
  // Full of the attacker's live reads: another host under its share takes
  // the place of the attacker's newest; the attacker, over it, is refused.
  ASSERT_TRUE(executor
                  .Schedule(ReadCost::kLarge, gate.Work(),
                            owned(&honest_host, &live))
                  .ok());
  EXPECT_EQ(refused.load(), 1);
  EXPECT_TRUE(absl::IsResourceExhausted(executor.Schedule(
      ReadCost::kLarge, gate.Work(), owned(&attacker_host, &live))));
  ASSERT_TRUE(executor
                  .Schedule(ReadCost::kLarge, gate.Work(),
                            owned(&third_host, &live))
                  .ok());
  EXPECT_EQ(refused.load(), 2);
  // Two hosts of three at their share (4 / 3 = 1): the honest one is not
  // refused for the attacker's sake, but gets no second place.
  EXPECT_TRUE(absl::IsResourceExhausted(executor.Schedule(
      ReadCost::kLarge, gate.Work(), owned(&honest_host, &live))));
  EXPECT_EQ(executor.queued(ReadCost::kLarge), 4u);
  gate.Release();
}

TEST(ReadExecutorTest, NoThreadsRunsOnTheCallersThread) {
  ReadExecutor executor({/*threads=*/0, 1, 1});
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id ran_on;
  ASSERT_TRUE(executor
                  .Schedule(ReadCost::kLarge,
                            [&] { ran_on = std::this_thread::get_id(); })
                  .ok());
  EXPECT_EQ(ran_on, caller);
}

TEST(ReadExecutorTest, TheDestructorRunsWhatWasQueued) {
  std::atomic<int> ran{0};
  {
    ReadExecutor executor({/*threads=*/1, 64, 64});
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(executor
                      .Schedule(i % 2 ? ReadCost::kSmall : ReadCost::kLarge,
                                [&] { ran.fetch_add(1); })
                      .ok());
    }
  }
  EXPECT_EQ(ran.load(), 50);
}

// Many threads scheduling at once: every accepted read runs exactly once.
TEST(ReadExecutorTest, ConcurrentSchedulersLoseNothing) {
  std::atomic<int> accepted{0}, ran{0};
  {
    ReadExecutor executor({/*threads=*/2, 100000, 100000});
    std::vector<std::thread> schedulers;
    for (int t = 0; t < 8; ++t) {
      schedulers.emplace_back([&, t] {
        for (int i = 0; i < 1000; ++i) {
          const ReadCost cost =
              (i + t) % 3 ? ReadCost::kSmall : ReadCost::kLarge;
          if (executor.Schedule(cost, [&] { ran.fetch_add(1); }).ok()) {
            accepted.fetch_add(1);
          }
        }
      });
    }
    for (std::thread& s : schedulers) s.join();
  }
  EXPECT_EQ(accepted.load(), 8000);
  EXPECT_EQ(ran.load(), 8000);
}

}  // namespace
}  // namespace metasrv::server
