// The service's Prometheus metrics (served at /metrics by the HttpServer).
#ifndef METASRV_SERVER_OPS_METRICS_H_
#define METASRV_SERVER_OPS_METRICS_H_

#include <array>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/ops/call_metrics.h"
#include "server/ops/flow_alerts.h"
#include "server/ops/greptime_metrics.h"

namespace metasrv::server {

// Why a report carried by a heartbeat was not merged.
enum class IgnoredReason {
  kNotFlownode,
  kNoNodeId,
  kTooManyFlows,
  kNotLeader,
  kMalformed,     // A malformed flow_start_time_map extension.
  kOverCapacity,  // Past --max_nodes or --max_total_flows.
};

// Why the flow state was reset by a leadership change.
enum class LeaderChangeCause {
  kElected,      // This replica became the leader.
  kSteppedDown,  // It stopped leading (lost or resigned its lease).
  kAdmin,        // The LeaderChange admin RPC, standalone.
};

// A connection we closed rather than its peer.
enum class ConnectionDrop {
  kGrpcRefused,  // gRPC port: no descriptor free below its ceiling.
  kHttpRefused,  // HTTP port: likewise.
  kHttpLate,     // HTTP: its request was not answered within the deadline.
  kHttpEvicted,  // HTTP: at the connection limit, a newer one took its place.
  kGrpcRapidReset,  // gRPC: it reset calls before their requests too fast.
  kGrpcEvicted,  // gRPC: at the connection bound, its host held the most.
  kGrpcRefusedAtAccept,  // gRPC: closed at accept (its host slowed, or too
                         // many closes under way).
};

// A call the door (rpc/call_door.h) turned away or ended, and why.
enum class DoorRefusal {
  kCalls,           // Past --max_calls open at once.
  kPeerCalls,       // Past --max_calls_per_peer from its peer.
  kRequestTimeout,  // Its request did not arrive within --request_timeout.
  kReplyShare,      // Its answer past the peer's share of the reply budget.
  kReplyStalled,    // Its answer unread past --reply_stall_limit: cancelled.
  kAuthFailed,      // An admin call with no token or the wrong one.
  kAuthBackoff,     // A wrong admin token whose answer was delayed.
  kStreams,         // Past --max_streams of its kind open at once.
  kEvicted,         // Ended to make room for a host under its fair share.
  kSilent,          // A heartbeat stream silent past its limit (3 x its told interval + retry).
  kResetEarly,      // Cancelled by its client before its request came.
  kReplyBudget,     // Its answer past --max_reply_bytes_in_flight.
  // Refused by the transport:
  kRequestBytes,    // Past --grpc_memory_limit of request bytes held.
  kHeaderList,      // Its header list past SETTINGS_MAX_HEADER_LIST_SIZE.
  kMessageSize,     // A request message past --max_message_bytes.
  kMalformed,       // Not a gRPC request, a grpc-timeout or message broken,
                    // an unknown grpc-encoding.
};
inline constexpr int kDoorRefusals = 16;

// The election's store as the metrics see it.
struct StoreHealth {
  bool elected = false;      // An election runs (not standalone).
  bool healthy = true;       // Its last call to the store succeeded.
  double errors = 0;         // Failed calls to the store, ever.
  double lease_seconds = 0;  // How long this leader may still act; 0 when
                             // it does not lead.
  // While not healthy: since the store last answered (or, if it never did,
  // since the first failure), and the latest failure.
  absl::Duration unhealthy_for;
  std::string last_error;
};

// The gRPC port's load now, as the transport and the door count it.
struct TransportLoad {
  double connections = 0;         // Connections open.
  double calls = 0;               // Calls open (the door's ledger).
  double request_bytes_held = 0;  // Request bytes not yet whole or asked for.
  double refusing = 0;  // 1 while every new call of a kind is refused.
};

// Counters and a histogram updated on the hot path, plus gauges read from
// `Sources` when scraped. Thread safety: all methods are safe from any thread;
// the hot-path ones take no lock.
class Metrics {
 public:
  // What the scrape-time gauges read. Each must be thread-safe and quick.
  struct Sources {
    std::function<double()> open_streams;  // Heartbeat streams open now.
    std::function<double()> flow_nodes;    // Nodes in the aggregate.
    std::function<double()> flows;         // Flows in the aggregate.
    std::function<double()> is_leader;     // 1 when this replica leads.
    std::function<double()> kv_keys;       // Keys in the in-memory KV.
    std::function<double()> watchers;      // WatchFlowState streams open.
    std::function<double()> has_leader;    // 1 when a leader is known.
    std::function<StoreHealth()> store;    // Unset: standalone.
    // Top flows, stalled flows, lag spread, silent flownodes; unset: none.
    std::function<FlowAlerts()> flow_alerts;
    std::function<TransportLoad()> transport;  // Unset: zeros.

  };

  // `reuse_threshold` is how long an exposition must take to build to be
  // served again (see Scrape(); --metrics_reuse_threshold); ZeroDuration():
  // never, every scrape is built afresh. `clock` (borrowed; must outlive
  // this) times the scrapes: the server's own, so that a test's manual clock
  // never serves an exposition again that the test's time has moved past.
  Metrics(Sources sources, absl::Duration reuse_threshold,
          const core::Clock* clock = core::SystemClock());
  ~Metrics();

  // Metrics that nobody reads, for components built without any (tests, the
  // fuzzer): `metrics`, or the discarding instance when it is null. Every
  // component takes its metrics through this, so none checks for null.
  static Metrics* OrDiscard(Metrics* metrics);

  // Everything, in Prometheus' text format (what /metrics answers). One at
  // a time. An exposition that took long to build (the reuse threshold or
  // more: ranking many flows) is served again to the scrapes of the next 20
  // times that long, so that a flood of scrapes costs at most a twentieth of a
  // core; a quick one is always built afresh. Times are the clock's
  // Monotonic().
  std::string Scrape() const ABSL_LOCKS_EXCLUDED(scrape_mu_);

  // `role` is the request header's role (0 datanode, 1 frontend, 2 flownode).
  void HeartbeatReceived(int role);
  // A flownode report of `bytes` (encoded) merged in `took`.
  void ReportMerged(absl::Duration took, size_t bytes);
  // A Cluster.Range or BatchGet of the in-memory KV answered in `took`.
  void KvRequested(KvRead op, absl::Duration took);
  // Every gRPC call, by method (the server's interceptor counts them).
  CallMetrics& calls() { return *calls_; }
  void ReportIgnored(IgnoredReason reason);
  // Every reset of the flow state by a leadership change, by cause.
  void LeaderChanged(LeaderChangeCause cause);
  // A WatchFlowState state was built and offered to every watcher.
  void WatchPublished();
  // A watcher skipped a state: a newer one replaced it before it was sent.
  void WatchSkipped();
  // A watcher that did not read was ended (over the reply budget).
  void WatchStalled();
  // Silent nodes removed by --node_report_ttl.
  void NodesExpired(uint64_t n);
  // A flownode with no stream open was forgotten for a new one at
  // --max_nodes.
  void NodeEvicted();
  // A connection closed by us, and why.
  void ConnectionDropped(ConnectionDrop why);
  // A call the door refused or ended, and why.
  void DoorRefused(DoorRefusal why);
  // The TLS certificate files changed: served (`installed`) or refused.
  void TlsRotated(bool installed);
  // The served certificate expires at `not_after` (unix seconds).
  void TlsServing(double not_after);

 private:
  class Gauges;

  const absl::Duration reuse_threshold_;  // ZeroDuration(): no reuse.
  const core::Clock* const clock_;        // Times the scrapes; not owned.
  mutable absl::Mutex scrape_mu_;         // One scrape at a time; guards below.
  mutable std::string exposition_ ABSL_GUARDED_BY(scrape_mu_);  // The last.
  // Until when (monotonic) the last exposition is served again.
  mutable absl::Time reuse_until_ ABSL_GUARDED_BY(scrape_mu_) =
      absl::InfinitePast();
  std::shared_ptr<prometheus::Registry> registry_;  // Counters, histogram.
  std::array<prometheus::Counter*, 3> heartbeats_;  // By role; in registry_.
  prometheus::Counter* merged_;                     // In registry_.
  std::array<prometheus::Counter*, 6> ignored_;     // By reason; in registry_.
  prometheus::Histogram* merge_seconds_;            // In registry_.
  std::array<prometheus::Counter*, 3> leader_changes_;    // By cause.
  prometheus::Counter* watch_published_;                  // In registry_.
  prometheus::Counter* watch_skipped_;                    // In registry_.
  prometheus::Counter* watch_stalled_;                    // In registry_.
  prometheus::Counter* nodes_expired_;                    // In registry_.
  prometheus::Counter* nodes_evicted_;                    // In registry_.
  std::array<prometheus::Counter*, 7> dropped_;           // By ConnectionDrop.
  std::array<prometheus::Counter*, kDoorRefusals> door_;  // By DoorRefusal.
  std::array<prometheus::Counter*, 2> tls_rotations_;     // Installed, refused.
  absl::Mutex tls_mu_;                                    // Guards tls_expiry_.
  // In registry_, once TLS serves.
  prometheus::Gauge* tls_expiry_ ABSL_GUARDED_BY(tls_mu_) = nullptr;
  std::shared_ptr<Gauges> gauges_;             // Scrape-time gauges.
  std::unique_ptr<CallMetrics> calls_;         // grpc_server_*; in registry_.
  std::unique_ptr<GreptimeMetrics> greptime_;  // greptime_meta_*; likewise.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_METRICS_H_
