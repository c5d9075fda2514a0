#include "server/ops/metrics.h"

#include <cstdint>
#include <iterator>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/clock.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "prometheus/text_serializer.h"
#include "server/ops/build_info.h"
#include "server/ops/log_limit.h"
#include "server/ops/process_stats.h"

namespace metasrv::server {

namespace {

// The standard process_* metrics (as Prometheus' client libraries name
// them), read from /proc at scrape time.
void AddProcessMetrics(std::vector<prometheus::MetricFamily>* out) {
  const ProcessStats stats = ReadProcessStats();
  auto add = [out](const char* name, const char* help,
                   prometheus::MetricType type, double value) {
    prometheus::MetricFamily family;
    family.name = name;
    family.help = help;
    family.type = type;
    prometheus::ClientMetric metric;
    if (type == prometheus::MetricType::Counter) {
      metric.counter.value = value;
    } else {
      metric.gauge.value = value;
    }
    family.metric.push_back(std::move(metric));
    out->push_back(std::move(family));
  };
  add("process_cpu_seconds_total", "User and system CPU time spent, seconds.",
      prometheus::MetricType::Counter, stats.cpu_seconds);
  add("process_resident_memory_bytes", "Resident memory size, bytes.",
      prometheus::MetricType::Gauge, stats.resident_bytes);
  add("process_virtual_memory_bytes", "Virtual memory size, bytes.",
      prometheus::MetricType::Gauge, stats.virtual_bytes);
  add("process_open_fds", "Open file descriptors.",
      prometheus::MetricType::Gauge, stats.open_fds);
  add("process_max_fds", "Limit of open file descriptors.",
      prometheus::MetricType::Gauge, stats.max_fds);
  add("process_start_time_seconds",
      "Start time of the process since the Unix epoch, seconds.",
      prometheus::MetricType::Gauge, stats.start_time_seconds);
  add("metasrv_log_lines_suppressed_total",
      "Log lines a client caused that the rate limit left out (gRPC's and "
      "per-request ones: per event and subject a few lines, then one per "
      "10 s; at most 100 per event per 10 s).",
      prometheus::MetricType::Counter,
      static_cast<double>(LogLinesSuppressed()));
}

prometheus::MetricFamily Family(const char* name, const char* help,
                                prometheus::MetricType type) {
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = type;
  return family;
}

// One gauge per ranked flow, labelled by its id: N series at most.
void AddRanked(const char* name, const char* help,
               const std::vector<core::RankedFlow>& flows,
               double (*value)(const core::RankedFlow&),
               std::vector<prometheus::MetricFamily>* out) {
  if (flows.empty()) return;
  prometheus::MetricFamily family =
      Family(name, help, prometheus::MetricType::Gauge);
  for (const core::RankedFlow& flow : flows) {
    prometheus::ClientMetric metric;
    metric.label.push_back({"flow_id", std::to_string(flow.flow_id)});
    metric.gauge.value = value(flow);
    family.metric.push_back(std::move(metric));
  }
  out->push_back(std::move(family));
}

void AddGauge(const char* name, const char* help, double value,
              std::vector<prometheus::MetricFamily>* out) {
  prometheus::MetricFamily family =
      Family(name, help, prometheus::MetricType::Gauge);
  prometheus::ClientMetric metric;
  metric.gauge.value = value;
  family.metric.push_back(std::move(metric));
  out->push_back(std::move(family));
}

void AddFlowAlerts(const FlowAlerts& alerts,
                   std::vector<prometheus::MetricFamily>* out) {
  const core::FlowRanking& r = alerts.ranking;
  AddRanked(
      "metasrv_flow_state_bytes",
      "State size of the --metrics_top_flows largest flows, bytes.", r.largest,
      [](const core::RankedFlow& f) {
        return static_cast<double>(f.state_size);
      },
      out);
  AddRanked(
      "metasrv_flow_exec_lag_seconds",
      "Now minus the last execution time, of the --metrics_top_flows "
      "most lagging flows.",
      r.most_lagging, [](const core::RankedFlow& f) { return f.lag_seconds; },
      out);
  AddGauge("metasrv_flows_stalled",
           "Flows whose last execution is older than --flow_stall_after.",
           static_cast<double>(r.stalled), out);
  // How lag spreads over all flows now: a gauge per bound (it falls as
  // flows catch up, so not a histogram, which rate() would misread; the
  // `le` label still serves histogram_quantile()).
  prometheus::MetricFamily lag = Family(
      "metasrv_flows_by_exec_lag",
      "Flows whose lag (now minus last execution) is at most `le` seconds, "
      "as of this scrape.",
      prometheus::MetricType::Gauge);
  const std::vector<double>& bounds = LagBuckets();
  for (size_t i = 0; i < r.lag_cumulative.size(); ++i) {
    prometheus::ClientMetric metric;
    metric.label.push_back(
        {"le", i < bounds.size() ? absl::StrCat(bounds[i]) : "+Inf"});
    metric.gauge.value = static_cast<double>(r.lag_cumulative[i]);
    lag.metric.push_back(std::move(metric));
  }
  out->push_back(std::move(lag));
  AddGauge("metasrv_flownodes_silent",
           "Flownodes not heard from for longer than --flownode_silent_after.",
           static_cast<double>(alerts.silent_nodes), out);
  AddGauge("metasrv_flow_stall_after_seconds",
           "--flow_stall_after: a flow whose lag passes it is stalled (the "
           "alert rules compare with it).",
           alerts.stall_after_seconds, out);
  AddGauge("metasrv_flownode_silent_after_seconds",
           "--flownode_silent_after: a flownode not heard from for longer is "
           "silent.",
           alerts.silent_after_seconds, out);
  AddGauge("metasrv_flownode_max_silence_seconds",
           "The longest time any flownode of this term has not been heard "
           "from.",
           alerts.max_silence_seconds, out);
}

// The election's store: its health, errors and the leader's lease.
void AddStore(const StoreHealth& store,
              std::vector<prometheus::MetricFamily>* out) {
  if (!store.elected) return;
  AddGauge("metasrv_store_healthy",
           "1 when the election's last call to its store succeeded, else 0.",
           store.healthy ? 1 : 0, out);
  prometheus::MetricFamily errors =
      Family("metasrv_store_errors_total",
             "Calls of the election to its store that failed.",
             prometheus::MetricType::Counter);
  prometheus::ClientMetric metric;
  metric.counter.value = store.errors;
  errors.metric.push_back(std::move(metric));
  out->push_back(std::move(errors));
  AddGauge("metasrv_lease_remaining_seconds",
           "How long this leader may still act without renewing its lease; "
           "0 on a follower. A leader whose value nears 0 cannot renew.",
           store.lease_seconds, out);
}

}  // namespace

// Gauges computed when Prometheus scrapes.
class Metrics::Gauges final : public prometheus::Collectable {
 public:
  explicit Gauges(Sources sources) : sources_(std::move(sources)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> out;
    auto add = [&](const char* name, const char* help,
                   const std::function<double()>& read) {
      prometheus::MetricFamily family;
      family.name = name;
      family.help = help;
      family.type = prometheus::MetricType::Gauge;
      prometheus::ClientMetric metric;
      metric.gauge.value = read ? read() : 0;
      family.metric.push_back(std::move(metric));
      out.push_back(std::move(family));
    };
    add("metasrv_open_streams", "Heartbeat streams open now.",
        sources_.open_streams);
    add("metasrv_flow_nodes", "Flownodes heard from since this term began.",
        sources_.flow_nodes);
    add("metasrv_flows", "Flows in the aggregate.", sources_.flows);
    add("metasrv_is_leader", "1 when this replica leads, else 0.",
        sources_.is_leader);
    add("metasrv_kv_keys", "Keys in the in-memory KV.", sources_.kv_keys);
    add("metasrv_watchers", "WatchFlowState streams open now.",
        sources_.watchers);
    add("greptime_meta_heartbeat_connection_num",
        "meta heartbeat connection num", sources_.open_streams);
    add("metasrv_has_leader",
        "1 when this replica knows a leader (itself or another), else 0.",
        sources_.has_leader);
    const TransportLoad load =
        sources_.transport ? sources_.transport() : TransportLoad{};
    add("metasrv_grpc_connections_open", "gRPC connections open now.",
        [&] { return load.connections; });
    add("metasrv_grpc_calls_open", "gRPC calls open now (the door's count).",
        [&] { return load.calls; });
    add("metasrv_grpc_request_bytes_held",
        "Request bytes the gRPC transport holds now, in messages not yet "
        "whole or not yet asked for (bounded by --grpc_memory_limit).",
        [&] { return load.request_bytes_held; });
    add("metasrv_grpc_refusing",
        "1 while the gRPC port refuses every new call of a kind that "
        "matters (heartbeats, reads) for a bound every client shares, and "
        "serves none of it (then /ready answers 503), else 0.",
        [&] { return load.refusing; });
    if (sources_.store) AddStore(sources_.store(), &out);
    if (sources_.flow_alerts) AddFlowAlerts(sources_.flow_alerts(), &out);
    AddProcessMetrics(&out);
    return out;
  }

 private:
  const Sources sources_;  // Where the values come from.
};

namespace {

// One counter family with one series per value of `label`.
template <size_t N>
std::array<prometheus::Counter*, N> Labelled(
    prometheus::Registry* registry, const char* name, const char* help,
    const char* label, const std::array<const char*, N>& values) {
  auto& family =
      prometheus::BuildCounter().Name(name).Help(help).Register(*registry);
  std::array<prometheus::Counter*, N> out{};
  for (size_t i = 0; i < N; ++i) out[i] = &family.Add({{label, values[i]}});
  return out;
}

// metasrv_build_info: 1, labelled with the build.
void RegisterBuildInfo(prometheus::Registry* r) {
  const BuildInfo build = GetBuildInfo();
  prometheus::BuildGauge()
      .Name("metasrv_build_info")
      .Help("Always 1; the labels say which build this is.")
      .Register(*r)
      .Add({{"version", build.version},
            {"commit", build.commit},
            {"build_type", build.build_type}})
      .Set(1);
}

// A counter without labels.
prometheus::Counter* Single(prometheus::Registry* registry, const char* name,
                            const char* help) {
  return &prometheus::BuildCounter()
              .Name(name)
              .Help(help)
              .Register(*registry)
              .Add({});
}

}  // namespace

Metrics::Metrics(Sources sources, absl::Duration reuse_threshold,
                 const core::Clock* clock)
    : reuse_threshold_(reuse_threshold),
      clock_(clock),
      registry_(std::make_shared<prometheus::Registry>()),
      gauges_(std::make_shared<Gauges>(std::move(sources))),
      calls_(std::make_unique<CallMetrics>(registry_.get())),
      greptime_(std::make_unique<GreptimeMetrics>(registry_.get())) {
  prometheus::Registry* r = registry_.get();
  heartbeats_ =
      Labelled<3>(r, "metasrv_heartbeats_received_total",
                  "Heartbeat requests received, by the sender's role.", "role",
                  {"datanode", "frontend", "flownode"});
  merged_ =
      Single(r, "metasrv_reports_merged_total", "Flow-state reports merged.");
  // In IgnoredReason's order.
  ignored_ =
      Labelled<6>(r, "metasrv_reports_ignored_total",
                  "Flow-state reports not merged, by reason.", "reason",
                  {"not_flownode", "no_node_id", "too_many_flows", "not_leader",
                   "malformed_extension", "over_capacity"});
  // 1 µs to ~16 ms, doubling.
  prometheus::Histogram::BucketBoundaries bounds;
  for (double b = 1e-6; b < 0.02; b *= 2) bounds.push_back(b);
  merge_seconds_ = &prometheus::BuildHistogram()
                        .Name("metasrv_merge_duration_seconds")
                        .Help("Time to merge one report.")
                        .Register(*r)
                        .Add({}, bounds);
  leader_changes_ = Labelled<3>(
      r, "metasrv_leader_changes_total",
      "Leadership changes, each of which reset the flow state, by cause.",
      "cause", {"elected", "stepped_down", "admin"});
  RegisterBuildInfo(r);
  watch_published_ = Single(r, "metasrv_watch_published_total",
                            "Flow states built and offered to watchers.");
  watch_skipped_ = Single(
      r, "metasrv_watch_skipped_total",
      "Flow states a slow watcher skipped: a newer one replaced them unsent.");
  watch_stalled_ = Single(
      r, "metasrv_watch_stalled_total",
      "WatchFlowState calls ended with RESOURCE_EXHAUSTED: a message not "
      "read within --reply_stall_limit (also counted in "
      "metasrv_calls_refused_total{reason=\"reply_stalled\"}).");
  nodes_expired_ = Single(r, "metasrv_nodes_expired_total",
                          "Silent flownodes removed by --node_report_ttl.");
  nodes_evicted_ = Single(r, "metasrv_nodes_evicted_total",
                          "Flownodes forgotten to make room for a new one at "
                          "--max_nodes: the one whose last report is oldest "
                          "once past the live window, else, all being live, "
                          "the oldest of the host holding more than its "
                          "share.");
  // In ConnectionDrop's order: two of each family.
  const auto refused = Labelled<2>(
      r, "metasrv_connections_refused_total",
      "Connections closed as soon as accepted: no file descriptor free "
      "below the port's ceiling (docs/RELIABILITY.md).",
      "port", {"grpc", "http"});
  const auto closed = Labelled<2>(
      r, "metasrv_http_connections_closed_total",
      "HTTP connections closed by the server: a request not answered in "
      "time (late), or the oldest one at the connection limit (evicted).",
      "reason", {"late", "evicted"});
  const auto grpc_closed = Labelled<3>(
      r, "metasrv_grpc_connections_closed_total",
      "gRPC connections the server closed: past a reset budget (resets "
      "faster than --max_early_resets, a host's resets of unanswered calls "
      "or stream errors) or header blocks cut at the limit (rapid_reset); "
      "at the port's connection bound, the oldest of the host holding the "
      "most (evicted); closed as soon as accepted, its host slowed for "
      "resets or too many closes under way (refused) (docs/RELIABILITY.md).",
      "reason", {"rapid_reset", "evicted", "refused"});
  dropped_ = {refused[0],     refused[1],     closed[0],     closed[1],
              grpc_closed[0], grpc_closed[1], grpc_closed[2]};
  door_ = Labelled<kDoorRefusals>(
      r, "metasrv_calls_refused_total",
      "Calls the server refused or ended before serving them in full, by "
      "reason: past --max_calls or --max_calls_per_peer, a request later "
      "than --request_timeout, an answer past its peer's share of the reply "
      "budget or unread past --reply_stall_limit, a wrong admin token (and "
      "of those, the ones answered late: auth_backoff), past --max_streams, "
      "ended to make room for a host under its fair share (evicted), or a "
      "heartbeat stream silent past its limit (3 x its told interval + "
      "retry), or cancelled by its client before its request came "
      "(reset_early), an answer past --max_reply_bytes_in_flight "
      "(reply_budget); by the transport: past --grpc_memory_limit of "
      "request bytes held (request_bytes), a header list too long "
      "(header_list), a message past --max_message_bytes (message_size), "
      "a request that is not gRPC or does not parse (malformed) "
      "(docs/RELIABILITY.md).",
      "reason",
      {"calls", "peer_calls", "request_timeout", "reply_share", "reply_stalled",
       "auth_failed", "auth_backoff", "streams", "evicted", "silent",
       "reset_early", "reply_budget", "request_bytes", "header_list",
       "message_size", "malformed"});
  tls_rotations_ = Labelled<2>(
      r, "metasrv_tls_rotations_total",
      "Changes of the --tls_cert/--tls_key/--tls_client_ca files: served "
      "(installed), or refused (a key that is not the certificate's, an "
      "unreadable file), the previous certificate serving on.",
      "result", {"installed", "refused"});
}

Metrics::~Metrics() = default;

std::string Metrics::Scrape() const {
  absl::MutexLock lock(&scrape_mu_);
  const absl::Time start = clock_->Monotonic();
  if (start < reuse_until_) return exposition_;
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  std::vector<prometheus::MetricFamily> gauges = gauges_->Collect();
  families.insert(families.end(), std::make_move_iterator(gauges.begin()),
                  std::make_move_iterator(gauges.end()));
  exposition_ = prometheus::TextSerializer().Serialize(families);
  const absl::Time end = clock_->Monotonic();
  if (reuse_threshold_ > absl::ZeroDuration() &&
      end - start >= reuse_threshold_) {
    reuse_until_ = end + 20 * (end - start);
  }
  return exposition_;
}

void Metrics::HeartbeatReceived(int role) {
  greptime_->HeartbeatReceived();
  if (role >= 0 && role < static_cast<int>(heartbeats_.size())) {
    heartbeats_[role]->Increment();
  }
}

void Metrics::ReportMerged(absl::Duration took, size_t bytes) {
  merged_->Increment();
  merge_seconds_->Observe(absl::ToDoubleSeconds(took));
  greptime_->ReportHandled(took, bytes);
}

void Metrics::KvRequested(KvRead op, absl::Duration took) {
  greptime_->KvRequest(op, took);
}

void Metrics::ReportIgnored(IgnoredReason reason) {
  ignored_[static_cast<size_t>(reason)]->Increment();
}

void Metrics::LeaderChanged(LeaderChangeCause cause) {
  leader_changes_[static_cast<size_t>(cause)]->Increment();
}

void Metrics::WatchPublished() { watch_published_->Increment(); }

void Metrics::WatchSkipped() { watch_skipped_->Increment(); }

void Metrics::WatchStalled() { watch_stalled_->Increment(); }

void Metrics::NodeEvicted() { nodes_evicted_->Increment(); }

void Metrics::NodesExpired(uint64_t n) {
  nodes_expired_->Increment(static_cast<double>(n));
}

void Metrics::ConnectionDropped(ConnectionDrop why) {
  dropped_[static_cast<size_t>(why)]->Increment();
}

void Metrics::TlsRotated(bool installed) {
  tls_rotations_[installed ? 0 : 1]->Increment();
}

void Metrics::TlsServing(double not_after) {
  absl::MutexLock lock(&tls_mu_);
  if (tls_expiry_ == nullptr) {
    // Registered only when TLS serves: a plaintext server has no such date.
    tls_expiry_ = &prometheus::BuildGauge()
                       .Name("metasrv_tls_certificate_expiry_timestamp_seconds")
                       .Help(
                           "When the gRPC certificate served now expires "
                           "(its notAfter), unix seconds.")
                       .Register(*registry_)
                       .Add({});
  }
  tls_expiry_->Set(not_after);
}

void Metrics::DoorRefused(DoorRefusal why) {
  door_[static_cast<size_t>(why)]->Increment();
}

Metrics* Metrics::OrDiscard(Metrics* metrics) {
  if (metrics != nullptr) return metrics;
  static Metrics* const discard = new Metrics(Sources{}, absl::ZeroDuration());
  return discard;
}

}  // namespace metasrv::server
