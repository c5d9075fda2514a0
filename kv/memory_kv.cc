#include "kv/memory_kv.h"

#include <utility>

namespace metasrv::kv {

absl::StatusOr<std::string> MemoryKv::Get(const std::string& key) const {
  ValuePtr value;
  {
    ReaderMutexLock lock(&mu_);
    value = store_.Find(key);
  }
  if (value == nullptr) return absl::NotFoundError("key not found");
  return value->Read();
}

absl::StatusOr<std::vector<KeyValue>> MemoryKv::BatchGet(
    const std::vector<std::string>& keys) const {
  std::vector<StoredEntry> found;
  found.reserve(keys.size());
  {
    ReaderMutexLock lock(&mu_);
    for (const std::string& key : keys) {
      if (ValuePtr v = store_.Find(key)) found.push_back({key, std::move(v)});
    }
  }
  std::vector<KeyValue> out;
  out.reserve(found.size());
  for (StoredEntry& e : found) {
    out.push_back({std::move(e.key), e.value->Read()});
  }
  return out;
}

absl::StatusOr<RangeResponse> MemoryKv::Range(const RangeRequest& req) const {
  absl::StatusOr<StoredRange> stored;
  {
    ReaderMutexLock lock(&mu_);
    stored = store_.Range(req);
  }
  if (!stored.ok()) return stored.status();
  RangeResponse out;
  out.more = stored->more;
  out.kvs.reserve(stored->entries.size());
  for (StoredEntry& e : stored->entries) {
    out.kvs.push_back(
        {std::move(e.key), e.value == nullptr ? std::string() : e.value->Read()});
  }
  return out;
}

absl::Status MemoryKv::Put(const std::string& key, std::string value) {
  return Write({{key, MakeBytes(std::move(value))}}, std::nullopt);
}

absl::StatusOr<bool> MemoryKv::Delete(const std::string& key) {
  ValuePtr old;  // Released after the lock.
  MutexLock lock(&mu_);
  old = store_.Find(key);
  store_.Apply(key, nullptr);
  return old != nullptr;
}

absl::Status MemoryKv::Write(const std::vector<Mutation>& batch,
                             std::optional<uint64_t> expected_generation) {
  MutexLock lock(&mu_);
  if (expected_generation.has_value() &&
      *expected_generation != generation_.load(std::memory_order_relaxed)) {
    return absl::AbortedError("kv was reset since the caller read it");
  }
  for (const Mutation& m : batch) store_.Apply(m.key, m.value);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> MemoryKv::Reset() {
  KvStore::Map dropped;  // Destroyed after the lock is released.
  {
    MutexLock lock(&mu_);
    dropped = store_.TakeAll();
    generation_.fetch_add(1, std::memory_order_release);
  }
  return dropped.size();
}

uint64_t MemoryKv::generation() const {
  return generation_.load(std::memory_order_acquire);
}

uint64_t MemoryKv::size() const {
  ReaderMutexLock lock(&mu_);
  return store_.size();
}

}  // namespace metasrv::kv
