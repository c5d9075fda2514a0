// The KV read interface: a byte-ordered map with etcd-style range reads.
//
// This is the "in-memory KV" of a metasrv leader as clients read it
// (GreptimeDB's Cluster.Range and Cluster.BatchGet). Whoever owns the data
// implements it; kv/ itself knows nothing of what the keys mean.
#ifndef METASRV_KV_KV_BACKEND_H_
#define METASRV_KV_KV_BACKEND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace metasrv::kv {

// One key and its bytes.
struct KeyValue {
  std::string key;    // The key.
  std::string value;  // Its bytes; empty for keys_only reads.
  bool operator==(const KeyValue& o) const {
    return key == o.key && value == o.value;
  }
};

// A range read with etcd's semantics:
// - empty range_end: the single key `key`;
// - range_end == "\0": every key >= `key`; key == range_end == "\0": all keys;
// - otherwise the half-open interval [key, range_end).
struct RangeRequest {
  std::string key;         // Start of the range (inclusive).
  std::string range_end;   // End of the range (exclusive), see above.
  int64_t limit = 0;       // Max keys to return; 0 means no limit.
  bool keys_only = false;  // Return keys without values.
};

// The answer to a range read. Keys come back in byte order.
struct RangeResponse {
  std::vector<KeyValue> kvs;  // The keys found, at most `limit`.
  bool more = false;          // True when the limit cut the result.
};

// Returns the smallest key greater than every key that has `prefix` as a
// prefix: the prefix with its last byte incremented after dropping trailing
// 0xff bytes. Returns "\0" (all keys from `prefix` on) when no such key exists.
std::string PrefixEnd(const std::string& prefix);

// Whether `key` is one of the keys `req` asks for (ignoring its limit).
bool InRange(const RangeRequest& req, const std::string& key);

// Read access to a KV. Implementations must be thread-safe: every method may
// be called from any thread, concurrently with the owner's writes. A read
// sees the KV at one instant.
class KvBackend {
 public:
  virtual ~KvBackend() = default;

  // Returns the bytes under `key`, or kNotFound.
  virtual absl::StatusOr<std::string> Get(const std::string& key) const = 0;

  // Returns the keys of `keys` that exist, in the order asked, without
  // duplicates removed. Missing keys are left out.
  virtual absl::StatusOr<std::vector<KeyValue>> BatchGet(
      const std::vector<std::string>& keys) const = 0;

  // Reads a range, see RangeRequest. kInvalidArgument for an empty key or a
  // negative limit.
  virtual absl::StatusOr<RangeResponse> Range(
      const RangeRequest& req) const = 0;

  // The number of keys held now.
  virtual uint64_t size() const = 0;
};

}  // namespace metasrv::kv

#endif  // METASRV_KV_KV_BACKEND_H_
