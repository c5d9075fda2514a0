#include "kv/memory_kv.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace metasrv::kv {
namespace {

using ::testing::ElementsAre;

TEST(MemoryKvTest, GetPutDelete) {
  MemoryKv kv;
  EXPECT_EQ(kv.Get("k").status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(kv.Put("k", "v1").ok());
  EXPECT_EQ(*kv.Get("k"), "v1");
  ASSERT_TRUE(kv.Put("k", "v2").ok());
  EXPECT_EQ(*kv.Get("k"), "v2");
  EXPECT_EQ(kv.size(), 1u);
  EXPECT_TRUE(*kv.Delete("k"));
  EXPECT_FALSE(*kv.Delete("k"));
  EXPECT_EQ(kv.Get("k").status().code(), absl::StatusCode::kNotFound);
}

TEST(MemoryKvTest, BatchGetSkipsMissingKeys) {
  MemoryKv kv;
  ASSERT_TRUE(kv.Put("a", "1").ok());
  ASSERT_TRUE(kv.Put("c", "3").ok());
  absl::StatusOr<std::vector<KeyValue>> got = kv.BatchGet({"c", "b", "a"});
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(*got, ElementsAre(KeyValue{"c", "3"}, KeyValue{"a", "1"}));
}

TEST(MemoryKvTest, RangeReadsValuesUnlessKeysOnly) {
  MemoryKv kv;
  ASSERT_TRUE(kv.Put("p/1", "one").ok());
  ASSERT_TRUE(kv.Put("p/2", "two").ok());
  ASSERT_TRUE(kv.Put("q", "q").ok());
  absl::StatusOr<RangeResponse> r = kv.Range({"p/", PrefixEnd("p/")});
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->kvs, ElementsAre(KeyValue{"p/1", "one"}, KeyValue{"p/2", "two"}));
  EXPECT_FALSE(r->more);
  r = kv.Range({"p/", PrefixEnd("p/"), 1, true});
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->kvs, ElementsAre(KeyValue{"p/1", ""}));
  EXPECT_TRUE(r->more);
}

class CountingValue final : public Value {
 public:
  explicit CountingValue(std::atomic<int>* reads) : reads_(reads) {}
  std::string Read() const override {
    return absl::StrCat("read#", reads_->fetch_add(1) + 1);
  }

 private:
  std::atomic<int>* reads_;
};

TEST(MemoryKvTest, LazyValueIsComputedOnEachRead) {
  MemoryKv kv;
  std::atomic<int> reads{0};
  ASSERT_TRUE(
      kv.Write({{"lazy", std::make_shared<CountingValue>(&reads)}}, std::nullopt)
          .ok());
  EXPECT_EQ(reads.load(), 0);
  EXPECT_EQ(*kv.Get("lazy"), "read#1");
  EXPECT_EQ(*kv.Get("lazy"), "read#2");
  // keys_only never computes it.
  ASSERT_TRUE(kv.Range({"lazy", "", 0, true}).ok());
  EXPECT_EQ(reads.load(), 2);
}

TEST(MemoryKvTest, ResetDropsEverythingAndBumpsGeneration) {
  MemoryKv kv;
  ASSERT_TRUE(kv.Put("a", "1").ok());
  ASSERT_TRUE(kv.Put("b", "2").ok());
  const uint64_t gen = kv.generation();
  EXPECT_EQ(*kv.Reset(), 2u);
  EXPECT_EQ(kv.generation(), gen + 1);
  EXPECT_EQ(kv.size(), 0u);
  EXPECT_EQ(kv.Get("a").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*kv.Reset(), 0u);
  EXPECT_EQ(kv.generation(), gen + 2);
}

TEST(MemoryKvTest, WriteWithStaleGenerationWritesNothing) {
  MemoryKv kv;
  const uint64_t gen = kv.generation();
  ASSERT_TRUE(kv.Reset().ok());
  absl::Status s = kv.Write({{"a", MakeBytes("1")}, {"b", MakeBytes("2")}}, gen);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(kv.size(), 0u);
  EXPECT_TRUE(kv.Write({{"a", MakeBytes("1")}, {"b", nullptr}}, gen + 1).ok());
  EXPECT_EQ(*kv.Get("a"), "1");
}

// Writers, readers and resets from many threads: every read sees a
// consistent value and the final contents are exactly what was written last.
TEST(MemoryKvTest, ConcurrentWritersReadersAndResets) {
  MemoryKv kv;
  constexpr int kWriters = 4, kKeys = 50, kRounds = 400;
  std::atomic<bool> stop{false};
  std::atomic<int> bad_reads{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int r = 0; r < kRounds; ++r) {
        for (int k = 0; k < kKeys; ++k) {
          ASSERT_TRUE(kv.Put(absl::StrCat("w", w, "/", k), absl::StrCat(r)).ok());
        }
      }
    });
  }
  for (int rd = 0; rd < 3; ++rd) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        absl::StatusOr<RangeResponse> r = kv.Range({"w", PrefixEnd("w")});
        if (!r.ok()) ++bad_reads;
        for (const KeyValue& e : r->kvs) {
          int v = -1;
          if (!absl::SimpleAtoi(e.value, &v) || v < 0 || v >= kRounds) ++bad_reads;
        }
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(kv.Reset().ok());
  });
  for (int i = 0; i < kWriters; ++i) threads[i].join();
  threads.back().join();
  stop = true;
  for (size_t i = kWriters; i + 1 < threads.size(); ++i) threads[i].join();
  EXPECT_EQ(bad_reads.load(), 0);
  EXPECT_EQ(kv.generation(), 20u);
  // Resets all finished before or during the writes; after a final round of
  // writes every key holds the last round.
  for (int w = 0; w < kWriters; ++w) {
    for (int k = 0; k < kKeys; ++k) {
      ASSERT_TRUE(kv.Put(absl::StrCat("w", w, "/", k), "final").ok());
    }
  }
  EXPECT_EQ(kv.size(), static_cast<uint64_t>(kWriters * kKeys));
}

}  // namespace
}  // namespace metasrv::kv
