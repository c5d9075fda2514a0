// A stored KV value: immutable bytes, either given or made from an immutable
// source the first time anyone reads them.
#ifndef METASRV_KV_VALUE_H_
#define METASRV_KV_VALUE_H_

#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/functional/any_invocable.h"

namespace metasrv::kv {

// The bytes of one key. A value made with an encoder is encoded at most once,
// on the first bytes() call, by whichever thread makes it, outside the
// owner's lock: a writer that stores a value many times a second (a
// heartbeat's report) pays nothing for the encoding until somebody reads it.
// The encoder must be deterministic and read only what it owns (a copy or a
// shared immutable source), so every reader of one value sees the same bytes.
//
// Thread safety: bytes() may be called from any number of threads at once.
class Value {
 public:
  using Encoder = absl::AnyInvocable<std::string() &&>;

  // A value of `bytes`.
  explicit Value(std::string bytes) : lazy_(false), bytes_(std::move(bytes)) {}
  // A value whose bytes `encode` makes on first read; `encode` is then
  // released with whatever it holds.
  explicit Value(Encoder encode) : lazy_(true), encode_(std::move(encode)) {}

  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;

  // The bytes; encodes them on the first call. Stable for the value's life.
  const std::string& bytes() const {
    if (!lazy_) return bytes_;
    // std::call_once (pthread_once) rather than absl::call_once: Debian's
    // abseil is not built with ThreadSanitizer, so its once gives TSan no
    // happens-before edge and every first read would be reported as a race
    // (the same reason as kv/mutex.h).
    std::call_once(once_, [this] {
      bytes_ = std::move(encode_)();
      encode_ = nullptr;
    });
    return bytes_;
  }

 private:
  const bool lazy_;              // Made by encode_ on first read.
  mutable std::once_flag once_;  // Done once bytes_ holds them (lazy only).
  mutable std::string bytes_;    // The bytes, once made.
  mutable Encoder encode_;       // Makes them; null once used (or never set).
};

// A stored value, shared so that a reader copies the pointer under its
// owner's lock and reads (or encodes) the bytes after releasing it.
using Bytes = std::shared_ptr<const Value>;

// Wraps bytes in a shared value.
inline Bytes MakeBytes(std::string bytes) {
  return std::make_shared<const Value>(std::move(bytes));
}

// A shared value encoded by `encode` on first read.
inline Bytes MakeLazyBytes(Value::Encoder encode) {
  return std::make_shared<const Value>(std::move(encode));
}

}  // namespace metasrv::kv

#endif  // METASRV_KV_VALUE_H_
