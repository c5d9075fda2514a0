#include "server/watch/flow_state_watch.h"

#include <grpcpp/impl/codegen/proto_utils.h>

#include <utility>

#include "absl/time/clock.h"
#include "metasrv/v1/metasrv.pb.h"
#include "server/rpc/grpc_status.h"
#include "server/services/flow_state_columns.h"
#include "server/services/flow_state_response.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {

WatchHub::WatchHub(const core::FlowStateManager* flow_state, Options options,
                   Metrics* metrics)
    : flow_state_(flow_state),
      options_(options),
      metrics_(Metrics::OrDiscard(metrics)),
      streams_(options.max_watchers, "watch") {}

WatchHub::~WatchHub() {
  Stop(grpc::Status(grpc::StatusCode::UNAVAILABLE, "metasrv is shutting down"));
}

void WatchHub::Start() {
  published_term_ = flow_state_->term();
  publisher_ = std::thread([this] { Run(); });
}

void WatchHub::Stop(const grpc::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (publisher_.joinable()) publisher_.join();
  streams_.Close(status);
}

void WatchHub::OnFlowStateChanged() {
  absl::MutexLock lock(&mu_);
  ++changes_;
}

absl::Status WatchHub::Add(WatchStream* stream) { return streams_.Add(stream); }

void WatchHub::Remove(WatchStream* stream) { streams_.Remove(stream); }

absl::StatusOr<std::shared_ptr<const WatchSnapshot>> WatchHub::Build(
    uint64_t sequence, bool reset) const {
  // A WatchFlowStateResponse: its own fields, then `state` (field 4) as the
  // cached chunk encodings of GetFlowState's columns, not copied.
  const EncodedFlowState state = EncodeFlowState(*flow_state_, false);
  std::string prefix;
  if (sequence != 0) {
    AppendVarint(1 << 3 | 0, &prefix);
    AppendVarint(sequence, &prefix);
  }
  if (reset) {
    AppendVarint(2 << 3 | 0, &prefix);
    AppendVarint(1, &prefix);
  }
  AppendVarint(3 << 3 | 0, &prefix);
  AppendVarint(static_cast<uint64_t>(absl::ToUnixMillis(absl::Now())), &prefix);
  AppendVarint(4 << 3 | 2, &prefix);
  AppendVarint(state.size(), &prefix);
  auto snapshot = std::make_shared<WatchSnapshot>();
  snapshot->sequence = sequence;
  snapshot->message = ToByteBuffer(state, std::move(prefix));
  return snapshot;
}

absl::StatusOr<std::shared_ptr<const WatchSnapshot>> WatchHub::Current() {
  uint64_t sequence = 0;
  {
    absl::MutexLock lock(&mu_);
    if (current_ != nullptr && current_->sequence == changes_) return current_;
    sequence = changes_;
  }
  absl::StatusOr<std::shared_ptr<const WatchSnapshot>> built =
      Build(sequence, /*reset=*/false);
  if (!built.ok()) return built;
  absl::MutexLock lock(&mu_);
  if (current_ == nullptr || current_->sequence < sequence) current_ = *built;
  return built;
}

void WatchHub::Run() {
  absl::Time last_push = absl::InfinitePast();
  while (true) {
    uint64_t sequence = 0;
    {
      absl::MutexLock lock(&mu_);
      auto changed_or_stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || changes_ != published_;
      };
      mu_.Await(absl::Condition(&changed_or_stopping));
      // Coalesce: no push sooner than min_interval after the previous one.
      mu_.AwaitWithDeadline(absl::Condition(&stopping_),
                            last_push + options_.min_interval);
      if (stopping_) return;
      sequence = changes_;
      published_ = sequence;
    }
    const uint64_t term = flow_state_->term();
    const bool reset = term != published_term_;
    absl::StatusOr<std::shared_ptr<const WatchSnapshot>> snapshot =
        Build(sequence, reset);
    last_push = absl::Now();
    if (!snapshot.ok()) {
      spdlog::warn("watch: cannot build the flow state: {}",
                   snapshot.status().ToString());
      continue;
    }
    published_term_ = term;
    {
      absl::MutexLock lock(&mu_);
      if (current_ == nullptr || current_->sequence < sequence) {
        current_ = *snapshot;
      }
    }
    // Only WatchStreams are ever added to streams_ (see Add()).
    streams_.ForEach([&snapshot](AbortableStream* stream) {
      static_cast<WatchStream*>(stream)->Offer(*snapshot);
    });
    metrics_->WatchPublished();
  }
}

WatchStream::WatchStream(WatchHub* hub, Metrics* metrics)
    : hub_(hub), metrics_(Metrics::OrDiscard(metrics)) {
  absl::Status added = hub_->Add(this);
  if (!added.ok()) {
    FinishOnce(ToGrpcStatus(added));
    return;
  }
  registered_ = true;
  // Registered first, so no push is missed; an older state offered after a
  // newer one is dropped.
  absl::StatusOr<std::shared_ptr<const WatchSnapshot>> current =
      hub_->Current();
  if (!current.ok()) {
    FinishOnce(ToGrpcStatus(current.status()));
    return;
  }
  Offer(*std::move(current));
}

void WatchStream::Offer(std::shared_ptr<const WatchSnapshot> snapshot) {
  {
    absl::MutexLock lock(&mu_);
    if (end_.finished || end_.finish_after_write.has_value()) return;
    if (offered_.has_value() && snapshot->sequence <= *offered_) return;
    offered_ = snapshot->sequence;
    if (end_.write_in_flight) {
      if (next_ != nullptr) metrics_->WatchSkipped();
      next_ = std::move(snapshot);
      return;
    }
    end_.write_in_flight = true;
    write_buffer_ = snapshot->message;
  }
  StartWrite(&write_buffer_);
}

void WatchStream::OnWriteDone(bool ok) {
  StreamEnd::AfterWrite after;
  {
    absl::MutexLock lock(&mu_);
    after = end_.WriteDone(ok);
    if (!after.go_on) {
      next_.reset();
    } else if (next_ != nullptr) {
      end_.write_in_flight = true;
      write_buffer_ = next_->message;
      next_.reset();
    } else {
      return;  // Idle until the next Offer().
    }
  }
  if (after.finish.has_value()) {
    FinishOnce(*after.finish);
  } else if (after.go_on) {
    StartWrite(&write_buffer_);
  }
}

void WatchStream::OnCancel() {
  // The client went away. A write in flight completes with !ok.
  Abort(grpc::Status(grpc::StatusCode::CANCELLED, "watcher cancelled"));
}

void WatchStream::Abort(const grpc::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    next_.reset();
    if (!end_.Abort(status)) return;
  }
  Finish(status);
}

void WatchStream::FinishOnce(const grpc::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    if (!end_.TryFinish()) return;
  }
  Finish(status);
}

void WatchStream::OnDone() {
  if (registered_) hub_->Remove(this);
  delete this;
}

}  // namespace metasrv::server
