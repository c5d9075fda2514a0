// The reactor of one Heartbeat stream: read a request, handle it, write its
// response, read the next. One operation in flight at a time, so responses
// go out exactly once per request and in order; no thread per stream.
//
// The stream carries raw bytes, parsed here: a request that does not parse
// ends the stream with INVALID_ARGUMENT (gRPC's typed callback API would
// report it as a plain failed read, indistinguishable from the client
// closing its side).
#ifndef METASRV_SERVER_SERVICES_HEARTBEAT_STREAM_H_
#define METASRV_SERVER_SERVICES_HEARTBEAT_STREAM_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include <atomic>
#include <cstddef>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "greptime/v1/meta/heartbeat.pb.h"
#include "server/codec/heartbeat_request.h"
#include "server/ops/call_metrics.h"
#include "server/rpc/stream_end.h"
#include "server/rpc/stream_registry.h"
#include "server/services/heartbeat_handler.h"

namespace metasrv::server {

class HeartbeatStream final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
      public AbortableStream {
 public:
  // Borrows all three (`context`, the call's, lives until OnDone()). A
  // request may inflate to `max_request_bytes`. Deletes itself when gRPC is
  // done with it.
  // Counted in `series` (started now, handled with its status in OnDone)
  // unless it is null.
  HeartbeatStream(HeartbeatHandler* handler, StreamRegistry* registry,
                  size_t max_request_bytes,
                  grpc::CallbackServerContext* context,
                  CallSeries* series = nullptr);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override;
  void Abort(const grpc::Status& status) override;

 private:
  // Finish(), its code kept for the call metrics.
  void FinishWith(const grpc::Status& status);
  // Finishes with `status` unless already finishing. Call without mu_ held.
  void FinishOnce(const grpc::Status& status);
  // The same with an error of ours, its GreptimeDB metadata in the trailers.
  void FinishOnce(const absl::Status& status);
  // Parses the request read into read_buffer_, handles it, and writes the
  // answer or finishes the stream.
  void HandleRead();

  HeartbeatHandler* const handler_;  // Handles each request; borrowed.
  StreamRegistry* const registry_;   // Where this stream is listed; borrowed.
  // The call's; its trailers carry an error's metadata. Borrowed.
  grpc::CallbackServerContext* const context_;
  const size_t max_request_bytes_;  // Limit of an inflated request.
  const std::string peer_;          // The client's address, for logs.
  bool registered_ = false;         // Whether Add() succeeded.
  SelfCountedCall counted_;         // Its call metrics.
  bool handshake_ = true;           // The next request is the first.
  // The flownode this stream is of, once its first request said so; for
  // the connect and disconnect lines.
  std::optional<uint64_t> flownode_;
  grpc::ByteBuffer read_buffer_;   // The request, as read.
  grpc::ByteBuffer write_buffer_;  // The response, as written.
  HeartbeatRequestReader request_;  // The request last read, parsed.
  greptime::v1::meta::HeartbeatResponse response_;  // Reused for each answer.

  // Guards end_. Held while starting a write or a read (so Abort() cannot
  // finish the stream in between), never while waiting for gRPC.
  absl::Mutex mu_;
  StreamEnd end_ ABSL_GUARDED_BY(mu_);  // Write in flight, finishing.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_SERVICES_HEARTBEAT_STREAM_H_
