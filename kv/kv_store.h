// The plain storage logic of an in-memory KV: keys to immutable bytes, and
// the etcd range rules over them. Single-threaded; its owner does the locking.
#ifndef METASRV_KV_KV_STORE_H_
#define METASRV_KV_KV_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"
#include "kv/kv_backend.h"
#include "kv/value.h"

namespace metasrv::kv {

// A key with its value, as a range found it.
struct StoredEntry {
  std::string key;  // The key.
  Bytes value;      // Its value; null for keys_only reads.
};

// The result of KvStore::Range.
struct StoredRange {
  std::vector<StoredEntry> entries;  // Entries in byte order.
  bool more = false;                 // True when the limit cut the result.
};

// Keys live in a hash map, so that a point read or an overwrite (every
// heartbeat rewrites its node's keys) costs O(1) whatever the number of keys;
// an ordered index over the same entries serves ranges. Inserting or deleting
// a key touches both.
//
// Not thread-safe: the owner serializes access. Movable, so an owner can swap
// a full store for an empty one under its lock and free it after.
class KvStore {
 public:
  KvStore() = default;
  KvStore(KvStore&&) = default;
  KvStore& operator=(KvStore&&) = default;

  // Returns the value under `key`, or null.
  Bytes Find(const std::string& key) const;

  // Collects a range; see RangeRequest for the rules. kInvalidArgument for an
  // empty key or a negative limit.
  absl::StatusOr<StoredRange> Range(const RangeRequest& req) const;

  // Sets `key` to `value`, or deletes it when `value` is null. Returns whether
  // the key existed.
  bool Apply(const std::string& key, Bytes value);

  // The value slot of `key`, created (holding null) if the key is new. The
  // reference stays valid, also across a move of the store, until the key is
  // deleted: an owner that writes one key often keeps it and skips the
  // lookup. Storing null in a slot does not delete the key; Apply() does.
  Bytes& Slot(const std::string& key);

  uint64_t size() const { return map_.size(); }

 private:
  // node_hash_map: entries stay put, so the ordered index can point at them.
  using Map = absl::node_hash_map<std::string, Bytes>;
  using Entry = Map::value_type;
  // Orders entries by key bytes.
  struct ByKey {
    using is_transparent = void;
    bool operator()(const Entry* a, const Entry* b) const {
      return a->first < b->first;
    }
    bool operator()(const Entry* a, const std::string& b) const {
      return a->first < b;
    }
    bool operator()(const std::string& a, const Entry* b) const {
      return a < b->first;
    }
  };

  Map map_;                                     // All entries, by key.
  absl::btree_set<const Entry*, ByKey> order_;  // The same, byte-ordered.
};

}  // namespace metasrv::kv

#endif  // METASRV_KV_KV_STORE_H_
