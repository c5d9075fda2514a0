#include "kv/kv_store.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace metasrv::kv {
namespace {

using ::testing::ElementsAre;

const std::string kZero(1, '\0');

class KvStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* k : {"a", "a/1", "a/2", "a/3", "b", "b/1", "c"}) {
      store_.Apply(k, MakeBytes(std::string("v:") + k));
    }
  }

  std::vector<std::string> Keys(const RangeRequest& req, bool* more = nullptr) {
    absl::StatusOr<StoredRange> r = store_.Range(req);
    EXPECT_TRUE(r.ok()) << r.status();
    std::vector<std::string> keys;
    for (const StoredEntry& e : r->entries) keys.push_back(e.key);
    if (more != nullptr) *more = r->more;
    return keys;
  }

  KvStore store_;
};

TEST_F(KvStoreTest, EmptyRangeEndIsSingleKey) {
  EXPECT_THAT(Keys({"a/2", ""}), ElementsAre("a/2"));
  EXPECT_THAT(Keys({"a/9", ""}), ElementsAre());
}

TEST_F(KvStoreTest, HalfOpenInterval) {
  EXPECT_THAT(Keys({"a/1", "a/3"}), ElementsAre("a/1", "a/2"));
  EXPECT_THAT(Keys({"b", "a"}), ElementsAre());
}

TEST_F(KvStoreTest, PrefixScan) {
  EXPECT_THAT(Keys({"a/", PrefixEnd("a/")}), ElementsAre("a/1", "a/2", "a/3"));
  EXPECT_EQ(PrefixEnd("a/"), "a0");
  EXPECT_EQ(PrefixEnd(std::string("a\xff\xff", 3)), "b");
  EXPECT_EQ(PrefixEnd(std::string("\xff", 1)), kZero);
}

TEST_F(KvStoreTest, ZeroRangeEndMeansToTheEnd) {
  EXPECT_THAT(Keys({"b", kZero}), ElementsAre("b", "b/1", "c"));
  EXPECT_THAT(Keys({kZero, kZero}),
              ElementsAre("a", "a/1", "a/2", "a/3", "b", "b/1", "c"));
}

TEST_F(KvStoreTest, LimitSetsMore) {
  bool more = false;
  EXPECT_THAT(Keys({"a", kZero, 2}, &more), ElementsAre("a", "a/1"));
  EXPECT_TRUE(more);
  EXPECT_THAT(Keys({"a/", PrefixEnd("a/"), 3}, &more),
              ElementsAre("a/1", "a/2", "a/3"));
  EXPECT_FALSE(more);
  EXPECT_THAT(Keys({"a/", PrefixEnd("a/"), 0}, &more),
              ElementsAre("a/1", "a/2", "a/3"));
  EXPECT_FALSE(more);
}

TEST_F(KvStoreTest, KeysOnlyCarriesNoValues) {
  absl::StatusOr<StoredRange> r = store_.Range({"b", kZero, 0, true});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->entries.size(), 3u);
  for (const StoredEntry& e : r->entries) EXPECT_EQ(e.value, nullptr);
}

TEST_F(KvStoreTest, RejectsEmptyKeyAndNegativeLimit) {
  EXPECT_EQ(store_.Range({"", ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_.Range({"a", kZero, -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(KvStoreTest, KeysAreByteOrdered) {
  KvStore store;
  store.Apply(std::string("\x80", 1), MakeBytes("high"));
  store.Apply("z", MakeBytes("z"));
  store.Apply(std::string("a\0b", 3), MakeBytes("nul"));
  absl::StatusOr<StoredRange> r = store.Range({kZero, kZero});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->entries.size(), 3u);
  EXPECT_EQ(r->entries[0].key, std::string("a\0b", 3));
  EXPECT_EQ(r->entries[1].key, "z");
  EXPECT_EQ(r->entries[2].key, std::string("\x80", 1));
}

TEST_F(KvStoreTest, ApplyReportsWhetherKeyExisted) {
  EXPECT_TRUE(store_.Apply("a", MakeBytes("new")));
  EXPECT_EQ(store_.Find("a")->bytes(), "new");
  EXPECT_FALSE(store_.Apply("zz", MakeBytes("x")));
  EXPECT_TRUE(store_.Apply("zz", nullptr));
  EXPECT_FALSE(store_.Apply("zz", nullptr));
  EXPECT_EQ(store_.Find("zz"), nullptr);
}

TEST_F(KvStoreTest, SlotIsTheKeysValueAndSurvivesAMove) {
  Bytes& slot = store_.Slot("a/2");
  EXPECT_EQ(slot->bytes(), "v:a/2");
  slot = MakeBytes("changed");
  EXPECT_EQ(store_.Find("a/2")->bytes(), "changed");
  Bytes& fresh = store_.Slot("d");  // A new key: in ranges at once.
  fresh = MakeBytes("new");
  EXPECT_THAT(Keys({"c", kZero}), ElementsAre("c", "d"));
  KvStore moved = std::move(store_);
  fresh = MakeBytes("after the move");
  EXPECT_EQ(moved.Find("d")->bytes(), "after the move");
}

}  // namespace
}  // namespace metasrv::kv
