#include "server/rpc/stream_registry.h"

#include "absl/strings/str_cat.h"

namespace metasrv::server {

absl::Status StreamRegistry::Add(AbortableStream* stream) {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::UnavailableError("server is shutting down");
  if (max_streams_ != 0 && streams_.size() >= max_streams_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "too many ", kind_, " streams (limit ", max_streams_, ")"));
  }
  streams_.insert(stream);
  return absl::OkStatus();
}

void StreamRegistry::Remove(AbortableStream* stream) {
  absl::MutexLock lock(&mu_);
  streams_.erase(stream);
}

void StreamRegistry::ForEach(absl::FunctionRef<void(AbortableStream*)> fn) {
  absl::MutexLock lock(&mu_);
  for (AbortableStream* stream : streams_) fn(stream);
}

void StreamRegistry::AbortAll(const grpc::Status& status) {
  ForEach([&status](AbortableStream* stream) { stream->Abort(status); });
}

void StreamRegistry::Close(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  for (AbortableStream* stream : streams_) stream->Abort(status);
}

uint64_t StreamRegistry::size() const {
  absl::MutexLock lock(&mu_);
  return streams_.size();
}

}  // namespace metasrv::server
