// A byte budget for answers in flight: serialized but not yet taken by the
// client. A client that asks for large answers and never reads them (a zero
// HTTP/2 window) holds them in the server's memory until its connection
// dies; past the budget, new answers are refused instead of held.
#ifndef METASRV_SERVER_RPC_REPLY_BUDGET_H_
#define METASRV_SERVER_RPC_REPLY_BUDGET_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace metasrv::server {

// Thread-safe, lock-free.
class ReplyBudget {
 public:
  // `limit` bytes; 0: no limit.
  explicit ReplyBudget(uint64_t limit) : limit_(limit) {}

  // Takes `bytes` if they fit; false (nothing taken) if they do not.
  bool TryTake(uint64_t bytes) {
    uint64_t used = used_.load(std::memory_order_relaxed);
    do {
      if (limit_ != 0 && used + bytes > limit_) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes,
                                          std::memory_order_relaxed));
    return true;
  }
  // Takes `bytes` whether or not they fit: memory that is held anyway
  // (a watch state every watcher shares), so that others see the budget
  // used up.
  void Take(uint64_t bytes) {
    used_.fetch_add(bytes, std::memory_order_relaxed);
  }
  // Gives back what TryTake() or Take() took.
  void Give(uint64_t bytes) {
    used_.fetch_sub(bytes, std::memory_order_relaxed);
  }
  // Whether more is held than the limit.
  bool Exceeded() const { return limit_ != 0 && used() > limit_; }

  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t limit() const { return limit_; }

 private:
  const uint64_t limit_;           // Bytes allowed in flight; 0: any.
  std::atomic<uint64_t> used_{0};  // Bytes in flight now.
};

// Bytes taken from a budget with Take(), given back when this is destroyed.
// Move-only; not thread-safe itself (the budget is).
class ReplyCharge {
 public:
  ReplyCharge() = default;
  // Takes `bytes` from `budget` (null: nothing is kept).
  ReplyCharge(ReplyBudget* budget, uint64_t bytes)
      : budget_(budget), bytes_(budget == nullptr ? 0 : bytes) {
    if (budget_ != nullptr) budget_->Take(bytes_);
  }
  ReplyCharge(ReplyCharge&& other) noexcept
      : budget_(std::exchange(other.budget_, nullptr)),
        bytes_(std::exchange(other.bytes_, 0)) {}
  ReplyCharge& operator=(ReplyCharge&& other) noexcept {
    if (this != &other) {
      Release();
      budget_ = std::exchange(other.budget_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  ~ReplyCharge() { Release(); }

  uint64_t bytes() const { return bytes_; }

 private:
  void Release() {
    if (budget_ != nullptr) budget_->Give(bytes_);
    budget_ = nullptr;
  }

  ReplyBudget* budget_ = nullptr;  // Where the bytes were taken; borrowed.
  uint64_t bytes_ = 0;             // Taken.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_REPLY_BUDGET_H_
