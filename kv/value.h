// Values held by the KV backend.
//
// Most values are plain bytes. A value may also be computed when it is read
// (a "lazy" value): the flow-state aggregate is kept incrementally by the core
// and only turned into bytes when somebody reads its key. Both kinds are
// immutable from the KV's point of view and are shared by pointer, so a reader
// can copy them out under the KV's lock in O(1) and read them after releasing it.
#ifndef METASRV_KV_VALUE_H_
#define METASRV_KV_VALUE_H_

#include <memory>
#include <string>

namespace metasrv::kv {

// A value stored under one key.
//
// Thread safety: Read() may be called from many threads at once, also after the
// key was overwritten or the KV was reset (a reader may still hold the pointer).
class Value {
 public:
  virtual ~Value() = default;
  // Returns the value's bytes as of now.
  virtual std::string Read() const = 0;
};

// Shared, immutable handle to a value.
using ValuePtr = std::shared_ptr<const Value>;

// Plain bytes.
class BytesValue final : public Value {
 public:
  explicit BytesValue(std::string bytes) : bytes_(std::move(bytes)) {}
  std::string Read() const override { return bytes_; }
  const std::string& bytes() const { return bytes_; }

 private:
  const std::string bytes_;  // The stored bytes.
};

// Wraps bytes in a shared value.
inline ValuePtr MakeBytes(std::string bytes) {
  return std::make_shared<const BytesValue>(std::move(bytes));
}

}  // namespace metasrv::kv

#endif  // METASRV_KV_VALUE_H_
