// One Heartbeat stream: read a request, handle it, answer it, read the next.
//
// After the first request, answering one request and reading the next are
// one core batch {send the answer, receive the next request}: one completion
// per heartbeat instead of two (a write's and a read's). Answers still go
// out exactly once per request and in order, one at a time (the next answer
// is only made once the batch carrying the previous one completed), and the
// status is sent once: at the client's end of stream, on an error, or at
// once when the stream is aborted (a step-down), behind any answer in flight.
//
// Requests arrive as raw bytes and are parsed here (HeartbeatRequestReader):
// a request that does not parse ends the stream with INVALID_ARGUMENT.
#ifndef METASRV_SERVER_SERVICES_HEARTBEAT_STREAM_H_
#define METASRV_SERVER_SERVICES_HEARTBEAT_STREAM_H_

#include <grpc/grpc.h>

#include <cstddef>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "greptime/v1/meta/heartbeat.pb.h"
#include "server/codec/heartbeat_request.h"
#include "server/rpc/server_call.h"
#include "server/rpc/stream_registry.h"
#include "server/services/heartbeat_handler.h"

namespace metasrv::server {

class HeartbeatStream final : public CallHandler, public AbortableStream {
 public:
  // Borrows all (`call` owns this). A request may inflate to
  // `max_request_bytes`.
  HeartbeatStream(ServerCall* call, HeartbeatHandler* handler,
                  StreamRegistry* registry, size_t max_request_bytes);
  ~HeartbeatStream() override;

  ServerCall* call() const { return call_; }

  void Start() override;
  void OnDone() override;
  void Abort(const grpc::Status& status) override;

 private:
  // The batch in flight completed: the answer it carried was sent and the
  // next request arrived (or the client ended its side, or the call broke).
  void OnBatch(bool ok);
  // Parses received_, handles it, and answers it, or ends the stream.
  void HandleRequest();
  // Starts the batch that sends `answer` (null: none; the first read) and
  // receives the next request. Takes `answer`.
  void StartBatch(grpc_byte_buffer* answer) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the stream with `status` (and `answer` before it, if given) unless
  // it is ending already.
  void FinishOnce(const grpc::Status& status,
                  const greptime::v1::meta::HeartbeatResponse* answer = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);
  void FinishOnce(const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);
  // Starts the finishing operation. Once.
  void StartFinish(const grpc::Status& status,
                   const greptime::v1::meta::HeartbeatResponse* answer)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnSent(bool) {}  // Initial metadata or status sent.

  ServerCall* const call_;           // The call; owns this.
  HeartbeatHandler* const handler_;  // Handles each request; borrowed.
  StreamRegistry* const registry_;   // Where this stream is listed; borrowed.
  const size_t max_request_bytes_;   // Limit of an inflated request.
  const std::string peer_;           // The client's address, for logs.
  bool registered_ = false;          // Whether Add() succeeded.
  bool handshake_ = true;            // The next request is the first.
  // The flownode this stream is of, once its first request said so; for
  // the connect and disconnect lines.
  std::optional<uint64_t> flownode_;
  HeartbeatRequestReader request_;  // The request last read, parsed.
  greptime::v1::meta::HeartbeatResponse response_;  // Reused per answer.
  CallOp<HeartbeatStream> batch_;                   // The batch in flight.
  CallOp<HeartbeatStream> metadata_;  // Initial metadata, before answer 1.
  CallOp<HeartbeatStream> finished_;  // The status sent.
  // The next request, once the batch completed; owned, until parsed.
  grpc_byte_buffer* received_ = nullptr;

  // Guards the fields below. Held while starting an operation (so Abort()
  // cannot finish the stream in between), never while waiting for gRPC.
  absl::Mutex mu_;
  bool finished_started_ ABSL_GUARDED_BY(mu_) = false;  // Status sent once.
  bool metadata_sent_ ABSL_GUARDED_BY(mu_) = false;     // Before answer 1.
  // The answer of the batch in flight; owned until the batch completes.
  grpc_byte_buffer* sent_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_SERVICES_HEARTBEAT_STREAM_H_
