// How a server stream handler that writes one message at a time ends:
// Finish() exactly once, and never while a write is in flight (an end
// requested then waits for the write to complete). Used by WatchStream and
// the health service's Watch.
#ifndef METASRV_SERVER_RPC_STREAM_END_H_
#define METASRV_SERVER_RPC_STREAM_END_H_

#include <grpcpp/support/status.h>

#include <optional>
#include <utility>

namespace metasrv::server {

// Plain state; the owning handler guards it with its own lock and calls
// Finish() itself, outside that lock, when a method says so.
struct StreamEnd {
  bool write_in_flight = false;  // A StartWrite() has not completed yet.
  bool finished = false;         // Finish() was called (or is due now).
  // The status to end with once the write in flight completes.
  std::optional<grpc::Status> finish_after_write;

  // The stream must end with `status`: true if the caller must call Finish()
  // now; false if it already ended or ends when the write in flight completes.
  bool Abort(const grpc::Status& status) {
    if (finished) return false;
    if (write_in_flight) {
      finish_after_write = status;
      return false;
    }
    finished = true;
    return true;
  }

  // True if the caller must call Finish() now (it had not ended yet).
  bool TryFinish() {
    if (finished) return false;
    finished = true;
    return true;
  }

  // What to do when a write completes.
  struct AfterWrite {
    bool go_on = false;                  // Keep streaming.
    std::optional<grpc::Status> finish;  // End with this (via TryFinish()).
  };
  AfterWrite WriteDone(bool ok) {
    write_in_flight = false;
    if (finished) return {};
    if (finish_after_write.has_value()) {
      return {false, std::exchange(finish_after_write, std::nullopt)};
    }
    if (!ok)
      return {false, grpc::Status(grpc::StatusCode::CANCELLED, "write failed")};
    return {true, std::nullopt};
  }
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_STREAM_END_H_
