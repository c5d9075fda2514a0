// Open server streams (heartbeat streams, watchers, each registry its own
// kind), so they can be counted, limited and ended.
#ifndef METASRV_SERVER_RPC_STREAM_REGISTRY_H_
#define METASRV_SERVER_RPC_STREAM_REGISTRY_H_

#include <grpcpp/support/status.h>

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace metasrv::server {

// A stream that can be told to end.
class AbortableStream {
 public:
  virtual ~AbortableStream() = default;
  // Ends the stream with `status` as soon as no write is in flight. Must not
  // block and must not call back into the registry.
  virtual void Abort(const grpc::Status& status) = 0;
};

// Thread safety: all methods are safe from any thread. A stream must Remove()
// itself before it is destroyed; Abort() is only called between Add() and
// Remove(), under the registry's lock, which keeps the stream alive.
class StreamRegistry {
 public:
  // `max_streams` 0 means no limit. `kind` names the streams in errors.
  explicit StreamRegistry(uint64_t max_streams = 0,
                          const char* kind = "heartbeat")
      : max_streams_(max_streams), kind_(kind) {}

  // Registers a new stream. kUnavailable after Close(); kResourceExhausted at
  // the limit. On error the stream is not registered.
  absl::Status Add(AbortableStream* stream);
  void Remove(AbortableStream* stream);

  // Calls `fn` with every open stream, under the registry's lock (which
  // keeps them alive); `fn` must not block or call back into the registry.
  void ForEach(absl::FunctionRef<void(AbortableStream*)> fn);
  // Aborts every open stream with `status`.
  void AbortAll(const grpc::Status& status);
  // Refuses new streams from now on, then aborts every open one.
  void Close(const grpc::Status& status);

  uint64_t size() const;

 private:
  const uint64_t max_streams_;  // Limit of open streams; 0 is none.
  const char* const kind_;      // What the streams are, for errors.
  mutable absl::Mutex mu_;      // Guards the fields below.
  absl::flat_hash_set<AbortableStream*> streams_ ABSL_GUARDED_BY(mu_);  // Open.
  bool closed_ ABSL_GUARDED_BY(mu_) = false;  // Set by Close().
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_STREAM_REGISTRY_H_
