// metasrvctl top: the largest and the most lagging flows, ranked by the
// same core::FlowRanker as the server's alerting metrics.
#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "cli/commands.h"
#include "core/flow_ranking.h"
#include "metasrv/v1/metasrv.grpc.pb.h"

namespace metasrvctl {
namespace {

struct TopOptions {
  size_t n = 10;                                  // --n: rows per list.
  absl::Duration stall_after = absl::Minutes(5);  // --stall_after.
  bool json = false;                              // --json.
  bool watch = false;                             // --watch.
  absl::Duration interval = absl::Seconds(2);     // --interval, with --watch.
  int64_t count = -1;  // --count: refreshes before stopping; -1: never.
};

// Parses the flags; false (after saying why) if one is bad.
bool ParseTop(const Flags& f, TopOptions* o) {
  auto bad = [](const char* flag) {
    std::fprintf(stderr, "metasrvctl top: bad --%s\n", flag);
    return false;
  };
  if (auto it = f.values.find("n");
      it != f.values.end() &&
      (!absl::SimpleAtoi(it->second, &o->n) || o->n > 10000)) {
    return bad("n");
  }
  if (auto it = f.values.find("stall_after");
      it != f.values.end() &&
      (!absl::ParseDuration(it->second, &o->stall_after) ||
       o->stall_after <= absl::ZeroDuration())) {
    return bad("stall_after");
  }
  if (auto it = f.values.find("interval");
      it != f.values.end() && (!absl::ParseDuration(it->second, &o->interval) ||
                               o->interval < absl::Milliseconds(100))) {
    return bad("interval");
  }
  if (auto it = f.values.find("count");
      it != f.values.end() &&
      (!absl::SimpleAtoi(it->second, &o->count) || o->count < 1)) {
    return bad("count");
  }
  o->json = FlagOn(f, "json");
  o->watch = FlagOn(f, "watch");
  return true;
}

// The aggregate with the node of each max, ranked as of `now`.
grpc::Status Rank(const Client& c, const TopOptions& o, absl::Time now,
                  metasrv::core::FlowRanking* out, bool* found) {
  auto stub = metasrv::v1::FlowState::NewStub(c.channel());
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  metasrv::v1::GetFlowStateRequest req;
  req.set_with_nodes(true);
  metasrv::v1::GetFlowStateResponse resp;
  grpc::Status s = stub->GetFlowState(&ctx, req, &resp);
  if (!s.ok()) return s;
  metasrv::core::FlowRanker ranker(now, o.n, o.stall_after, {});
  for (int i = 0; i < resp.flow_ids_size(); ++i) {
    metasrv::core::AggregateFlow flow;
    flow.stat.flow_id = resp.flow_ids(i);
    flow.stat.fields = static_cast<uint8_t>(resp.fields(i));
    flow.stat.state_size = resp.state_sizes(i);
    flow.stat.last_exec_time = resp.last_exec_times_ms(i);
    flow.state_size_node = resp.state_size_nodes(i);
    flow.last_exec_time_node = resp.last_exec_time_nodes(i);
    ranker.Add(flow);
  }
  *out = ranker.Finish();
  *found = resp.found();
  return grpc::Status::OK;
}

int PrintTopJson(const metasrv::core::FlowRanking& r, const TopOptions& o,
                 absl::Time now) {
  google::protobuf::Value out;
  auto* fields = out.mutable_struct_value()->mutable_fields();
  (*fields)["time_ms"].set_number_value(absl::ToUnixMillis(now));
  (*fields)["flows"].set_number_value(r.flows);
  (*fields)["stalled"].set_number_value(r.stalled);
  (*fields)["stall_after_seconds"].set_number_value(
      absl::ToDoubleSeconds(o.stall_after));
  auto* largest = (*fields)["largest"].mutable_list_value();
  for (const metasrv::core::RankedFlow& f : r.largest) {
    auto* row = largest->add_values()->mutable_struct_value()->mutable_fields();
    (*row)["flow_id"].set_number_value(f.flow_id);
    (*row)["state_size"].set_number_value(f.state_size);
    (*row)["node"].set_number_value(f.node);
  }
  auto* lagging = (*fields)["most_lagging"].mutable_list_value();
  for (const metasrv::core::RankedFlow& f : r.most_lagging) {
    auto* row = lagging->add_values()->mutable_struct_value()->mutable_fields();
    (*row)["flow_id"].set_number_value(f.flow_id);
    (*row)["lag_seconds"].set_number_value(f.lag_seconds);
    (*row)["last_exec_time_ms"].set_number_value(f.last_exec_time);
    (*row)["node"].set_number_value(f.node);
  }
  return PrintJson(out);
}

void PrintTopTable(const metasrv::core::FlowRanking& r, const TopOptions& o,
                   absl::Time now, bool found) {
  std::printf(
      "%s  flows: %llu  stalled (no execution for %s): %llu\n",
      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", now, absl::UTCTimeZone()).c_str(),
      static_cast<unsigned long long>(r.flows),
      absl::FormatDuration(o.stall_after).c_str(),
      static_cast<unsigned long long>(r.stalled));
  if (!found) {
    std::printf("no flow state (no report since the last leader change)\n");
    return;
  }
  std::printf("\nLARGEST STATE\n%-12s %-16s %-12s\n", "FLOW_ID", "STATE_BYTES",
              "NODE");
  for (const metasrv::core::RankedFlow& f : r.largest) {
    std::printf("%-12u %-16llu %-12llu\n", f.flow_id,
                static_cast<unsigned long long>(f.state_size),
                static_cast<unsigned long long>(f.node));
  }
  std::printf("\nMOST LAGGING\n%-12s %-12s %-24s %-12s\n", "FLOW_ID", "LAG",
              "LAST_EXEC_TIME", "NODE");
  for (const metasrv::core::RankedFlow& f : r.most_lagging) {
    std::printf(
        "%-12u %-12s %-24s %-12llu\n", f.flow_id,
        absl::FormatDuration(absl::Seconds(static_cast<int64_t>(f.lag_seconds)))
            .c_str(),
        absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ",
                         absl::FromUnixMillis(f.last_exec_time),
                         absl::UTCTimeZone())
            .c_str(),
        static_cast<unsigned long long>(f.node));
  }
}

}  // namespace

int Top(const Client& c, const Flags& f) {
  TopOptions o;
  if (!ParseTop(f, &o)) return kUsage;
  Client leader = c;
  Follow follow("top");
  for (int64_t shown = 0; o.count < 0 || shown < o.count; ++shown) {
    if (shown > 0) absl::SleepFor(o.interval);
    const absl::Time now = absl::Now();
    metasrv::core::FlowRanking ranking;
    bool found = false;
    grpc::Status s = Rank(leader, o, now, &ranking, &found);
    if (!s.ok()) {
      if (!o.watch || !follow.Lost(s)) return Fail(s);
      leader = c.Following();
      --shown;
      continue;
    }
    follow.Found();
    if (o.json) {
      if (PrintTopJson(ranking, o, now) != kOk) return kError;
    } else {
      // Like top(1): each refresh redraws the screen.
      if (o.watch) std::printf("\033[H\033[2J");
      PrintTopTable(ranking, o, now, found);
    }
    std::fflush(stdout);
    if (!o.watch) break;
  }
  return kOk;
}

}  // namespace metasrvctl
