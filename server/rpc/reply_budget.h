// A byte budget for answers in flight: serialized but not yet taken by the
// client. A client that asks for large answers and never reads them (a zero
// HTTP/2 window) holds them in the server's memory until its connection
// dies; past the budget, new answers are refused instead of held.
#ifndef METASRV_SERVER_RPC_REPLY_BUDGET_H_
#define METASRV_SERVER_RPC_REPLY_BUDGET_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

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
  // Gives back what TryTake() took.
  void Give(uint64_t bytes) {
    used_.fetch_sub(bytes, std::memory_order_relaxed);
  }

  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t limit() const { return limit_; }

 private:
  const uint64_t limit_;           // Bytes allowed in flight; 0: any.
  std::atomic<uint64_t> used_{0};  // Bytes in flight now.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_REPLY_BUDGET_H_
