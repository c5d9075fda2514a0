#include "kv/value.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace metasrv::kv {
namespace {

TEST(ValueTest, GivenBytesAreReturnedAsGiven) {
  Bytes value = MakeBytes(std::string("a\0b", 3));
  EXPECT_EQ(value->bytes(), std::string("a\0b", 3));
}

TEST(ValueTest, AnEncoderRunsOnlyWhenReadAndThenOnce) {
  int runs = 0;
  Bytes value = MakeLazyBytes([&runs]() {
    ++runs;
    return std::string("encoded");
  });
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(value->bytes(), "encoded");
  EXPECT_EQ(value->bytes(), "encoded");
  EXPECT_EQ(runs, 1);
}

TEST(ValueTest, WhatTheEncoderHoldsIsReleasedOnceEncoded) {
  auto source = std::make_shared<const std::string>("report");
  std::weak_ptr<const std::string> watch = source;
  Bytes value = MakeLazyBytes([held = std::move(source)]() { return *held; });
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(value->bytes(), "report");
  EXPECT_TRUE(watch.expired());
}

// Readers racing for the first read: one encoding, one answer for all.
TEST(ValueTest, ConcurrentFirstReadsEncodeOnceAndAgree) {
  for (int round = 0; round < 50; ++round) {
    std::atomic<int> runs{0};
    Bytes value = MakeLazyBytes([&runs, round]() {
      runs.fetch_add(1);
      return std::string(1000, static_cast<char>('a' + round % 26));
    });
    std::atomic<bool> go{false};
    std::vector<const std::string*> seen(8, nullptr);
    std::vector<std::thread> readers;
    for (int i = 0; i < 8; ++i) {
      readers.emplace_back([&, i] {
        while (!go.load()) {
        }
        seen[i] = &value->bytes();
      });
    }
    go.store(true);
    for (std::thread& t : readers) t.join();
    EXPECT_EQ(runs.load(), 1);
    for (const std::string* s : seen) {
      ASSERT_EQ(s, seen[0]);
      EXPECT_EQ(*s, std::string(1000, static_cast<char>('a' + round % 26)));
    }
  }
}

}  // namespace
}  // namespace metasrv::kv
