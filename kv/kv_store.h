// The plain storage logic of the in-memory KV: an ordered map and the etcd
// range rules over it. Single-threaded; MemoryKv owns the locking.
#ifndef METASRV_KV_KV_STORE_H_
#define METASRV_KV_KV_STORE_H_

#include <cstdint>
#include "absl/container/btree_set.h"
#include "absl/container/node_hash_map.h"
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kv/kv_backend.h"

namespace metasrv::kv {

// A key with its (not yet read) value.
struct StoredEntry {
  std::string key;  // The key.
  ValuePtr value;   // Its value; null for keys_only reads.
};

// The result of KvStore::Range, before values are read.
struct StoredRange {
  std::vector<StoredEntry> entries;  // Entries in byte order.
  bool more = false;                 // True when the limit cut the result.
};

// Keys live in a hash map, so that a point read or an overwrite (every
// heartbeat rewrites its node's key) costs O(1) whatever the number of keys;
// an ordered index over the same entries serves ranges. Inserting or deleting
// a key touches both.
//
// Not thread-safe: the caller serializes access.
class KvStore {
 public:
  // node_hash_map: entries stay put, so the ordered index can point at them.
  using Map = absl::node_hash_map<std::string, ValuePtr>;

  // Returns the value under `key`, or null.
  ValuePtr Find(const std::string& key) const;

  // Collects a range; see RangeRequest for the rules. kInvalidArgument for an
  // empty key or a negative limit.
  absl::StatusOr<StoredRange> Range(const RangeRequest& req) const;

  // Sets or deletes one key (null value deletes). Returns whether it existed.
  bool Apply(const std::string& key, ValuePtr value);

  // Removes and returns everything.
  Map TakeAll();

  uint64_t size() const { return map_.size(); }

 private:
  using Entry = Map::value_type;
  // Orders entries by key bytes.
  struct ByKey {
    using is_transparent = void;
    bool operator()(const Entry* a, const Entry* b) const { return a->first < b->first; }
    bool operator()(const Entry* a, const std::string& b) const { return a->first < b; }
    bool operator()(const std::string& a, const Entry* b) const { return a < b->first; }
  };

  Map map_;                              // All entries, by key.
  absl::btree_set<const Entry*, ByKey> order_;  // The same entries, byte-ordered.
};

}  // namespace metasrv::kv

#endif  // METASRV_KV_KV_STORE_H_
