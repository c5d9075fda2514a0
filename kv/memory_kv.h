// The thread-safe in-memory KV backend.
#ifndef METASRV_KV_MEMORY_KV_H_
#define METASRV_KV_MEMORY_KV_H_

#include <atomic>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "kv/mutex.h"
#include "kv/kv_backend.h"
#include "kv/kv_store.h"

namespace metasrv::kv {

// An in-memory KvBackend.
//
// Thread safety: every method may be called from any thread. Readers share the
// lock and do not block each other; writers take it exclusively. Values are
// read (and lazy values computed) after the lock is released, so a slow value
// never blocks writers.
class MemoryKv final : public KvBackend {
 public:
  MemoryKv() = default;
  MemoryKv(const MemoryKv&) = delete;
  MemoryKv& operator=(const MemoryKv&) = delete;

  absl::StatusOr<std::string> Get(const std::string& key) const override;
  absl::StatusOr<std::vector<KeyValue>> BatchGet(
      const std::vector<std::string>& keys) const override;
  absl::StatusOr<RangeResponse> Range(const RangeRequest& req) const override;
  absl::Status Put(const std::string& key, std::string value) override;
  absl::StatusOr<bool> Delete(const std::string& key) override;
  absl::Status Write(const std::vector<Mutation>& batch,
                     std::optional<uint64_t> expected_generation) override;
  absl::StatusOr<uint64_t> Reset() override;
  uint64_t generation() const override;
  uint64_t size() const override;

 private:
  mutable Mutex mu_;                 // Guards store_ and writes of generation_.
  KvStore store_ ABSL_GUARDED_BY(mu_);     // The keys and values.
  std::atomic<uint64_t> generation_{0};    // Resets so far; written under mu_.
};

}  // namespace metasrv::kv

#endif  // METASRV_KV_MEMORY_KV_H_
