#include "server/rpc/call_dispatcher.h"

#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "server/ops/log_limit.h"
#include "server/rpc/h2_door_call.h"

namespace metasrv::server {
namespace {

DoorRefusal DoorRefusalOf(TransportRefusal why) {
  switch (why) {
    case TransportRefusal::kRequestBytes:
      return DoorRefusal::kRequestBytes;
    case TransportRefusal::kHeaderList:
      return DoorRefusal::kHeaderList;
    case TransportRefusal::kMessageSize:
      return DoorRefusal::kMessageSize;
    case TransportRefusal::kExpired:
      return DoorRefusal::kRequestTimeout;
    default:
      return DoorRefusal::kMalformed;
  }
}

}  // namespace

int64_t CallBook::live() const {
  absl::MutexLock lock(&mu_);
  return live_;
}

bool CallBook::WaitForNone(absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto none = [this]()
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return live_ == 0; };
  return mu_.AwaitWithDeadline(absl::Condition(&none), deadline);
}

void CallBook::Enter() {
  absl::MutexLock lock(&mu_);
  ++live_;
}

void CallBook::Leave() {
  absl::MutexLock lock(&mu_);
  --live_;
}

CallDispatcher::CallDispatcher(CallMetrics* metrics, CallDoor* door,
                               size_t max_request_bytes)
    : metrics_(metrics), door_(door), max_request_bytes_(max_request_bytes) {
  if (metrics_ != nullptr) {
    // One series for every unregistered method: a client cannot make new
    // series by making up names.
    unknown_series_ =
        metrics_->For("/unknown/unknown", CallMetrics::Type::kUnary);
  }
}

CallDispatcher::~CallDispatcher() = default;

void CallDispatcher::Add(Method method, CallFactory make) {
  const MethodRow& row = RowOf(method);
  CallSeries* series =
      metrics_ == nullptr ? nullptr : metrics_->For(row.path, row.kind);
  methods_[row.path] = Entry{&row, std::move(make), series};
}

void CallDispatcher::OnCall(H2Call* call, const PeerAddress& peer) {
  H2Start start;
  start.call = call;
  start.peer = peer.text;
  start.book = &book_;
  start.limits.door = door_;
  auto it = methods_.find(call->head().path);
  if (it == methods_.end()) {
    start.series = unknown_series_;
    H2Refused::Start(std::move(start), absl::UnimplementedError(""), false,
                     absl::Now());
    return;
  }
  const Entry& entry = it->second;
  start.row = entry.row;
  start.series = entry.series;
  start.limits.max_request_bytes = entry.row->max_request_bytes != 0
                                       ? entry.row->max_request_bytes
                                       : max_request_bytes_;
  // Charged from its HEADERS, before its handler exists.
  absl::Time answer_at = absl::InfinitePast();
  absl::Status entered = door_->Enter(*entry.row, peer,
                                      call->head().authorization,
                                      &start.ticket, &answer_at);
  if (!entered.ok()) {
    H2Refused::Start(std::move(start), std::move(entered), true,
                     absl::Now() + (answer_at - door_->Now()));
    return;
  }
  entry.make(std::move(start));
}

void CallDispatcher::OnRefused(H2Call* call, TransportRefusal why,
                               const absl::Status& status) {
  auto it = methods_.find(call->head().path);
  const bool known = it != methods_.end();
  door_->Refused(known ? it->second.row : nullptr, DoorRefusalOf(why), status);
  // Refused at its HEADERS, before any call object: its method's series
  // records the code its client is told (later refusals end a door call,
  // which records it).
  if (call->head().refusal != TransportRefusal::kNone) {
    CallSeries* series = known ? it->second.series : unknown_series_;
    if (series != nullptr) {
      series->Started();
      series->Handled(static_cast<int>(status.code()), absl::ZeroDuration());
    }
  }
}

void CallDispatcher::OnConnectionCut(const PeerAddress& peer) {
  door_->metrics()->ConnectionDropped(ConnectionDrop::kGrpcRapidReset);
  LogLimited(spdlog::level::warn, "rapid_reset", peer.host,
             "closed the connection of {}: it reset more calls in a burst "
             "than --max_early_resets allows, or sent a header block without "
             "end",
             peer.text);
}

void CallDispatcher::OnConnectionEvicted(const std::string& host) {
  door_->metrics()->ConnectionDropped(ConnectionDrop::kGrpcEvicted);
  LogLimited(spdlog::level::warn, "connection_evicted", host,
             "closed the oldest connection of {}: at the gRPC port's "
             "connection bound, the host holding the most gives one up",
             host);
}

void CallDispatcher::OnConnectionRefused(const std::string& host,
                                         bool slowed) {
  door_->metrics()->ConnectionDropped(ConnectionDrop::kGrpcRefusedAtAccept);
  LogLimited(spdlog::level::warn, "connection_refused", host,
             "closed a new connection of {} as soon as accepted: {}", host,
             slowed ? "its host went past a reset budget within the last "
                      "second"
                    : "too many connections are being closed (a flood of "
                      "connections)");
}

void CallDispatcher::SweepOn(H2Transport* transport) {
  if (door_->options().sweep_period <= absl::ZeroDuration()) {
    return;
  }
  transport->Every(door_->options().sweep_period, [door = door_] { door->Sweep(); });
}

bool CallDispatcher::WaitForCalls(absl::Time deadline) const {
  return book_.WaitForNone(deadline);
}

}  // namespace metasrv::server
