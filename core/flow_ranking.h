// The flows that most need an operator's eye: the largest states, the
// longest since their last execution, and how lag spreads over all flows.
#ifndef METASRV_CORE_FLOW_RANKING_H_
#define METASRV_CORE_FLOW_RANKING_H_

#include <cstdint>
#include <queue>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "core/flow_aggregate.h"

namespace metasrv::core {

// One flow in a top-N list.
struct RankedFlow {
  uint32_t flow_id = 0;
  uint64_t state_size = 0;     // Bytes (largest list).
  int64_t last_exec_time = 0;  // Unix ms (lagging list).
  double lag_seconds = 0;      // Now minus last_exec_time, >= 0.
  uint64_t node = 0;           // The node holding the ranked field's max.
};

// What FlowRanker found.
struct FlowRanking {
  uint64_t flows = 0;                    // Flows seen.
  std::vector<RankedFlow> largest;       // By state size, largest first.
  std::vector<RankedFlow> most_lagging;  // By lag, longest first.
  // The stalled flows of most_lagging: the `keep` of the next ranking.
  absl::flat_hash_set<uint32_t> stalled_listed;
  uint64_t stalled = 0;  // Flows whose lag exceeds the stall threshold.
  // Lag over every flow with an execution time: counts per bucket upper
  // bound, cumulative (the last, +Inf, counts them all).
  std::vector<uint64_t> lag_cumulative;
};

// One pass over the aggregate's flows: O(flows * log top_n) time, O(top_n)
// memory. Ties rank the lower flow id first. Flows without a state size are
// not in `largest`; without an execution time, not in the lag figures.
//
// `most_lagging` is sticky for stalled flows: a flow in `keep` (the stalled
// flows of the previous ranking) that is still stalled stays in the list
// whatever lags more, so that its series, and an alert's timer on it, live
// as long as it stays stalled. The other places go by lag.
// Not thread-safe (one pass, one thread).
class FlowRanker {
 public:
  // `now`: the time lags are measured to. `lag_buckets`: histogram upper
  // bounds in seconds, ascending.
  FlowRanker(absl::Time now, size_t top_n, absl::Duration stall_after,
             std::vector<double> lag_buckets,
             absl::flat_hash_set<uint32_t> keep = {});

  void Add(const AggregateFlow& flow);
  // The result; the ranker is spent.
  FlowRanking Finish();

  const std::vector<double>& lag_buckets() const { return lag_buckets_; }

 private:
  // Orders a min-heap on `key` so that its top is the first to drop.
  struct Entry {
    double key;        // Size or lag: larger ranks higher.
    uint32_t flow_id;  // Lower ranks higher among equal keys.
    RankedFlow flow;   // What is reported.
  };
  struct Worse {
    bool operator()(const Entry& a, const Entry& b) const {
      if (a.key != b.key) return a.key > b.key;
      return a.flow_id < b.flow_id;
    }
  };
  using Heap = std::priority_queue<Entry, std::vector<Entry>, Worse>;

  void Offer(Heap* heap, Entry entry);
  std::vector<RankedFlow> Drain(Heap* heap);

  const int64_t now_ms_;                      // Lags are measured to this.
  const size_t top_n_;                        // List lengths.
  const double stall_after_seconds_;          // Stall threshold.
  const std::vector<double> lag_buckets_;     // Histogram bounds, seconds.
  const absl::flat_hash_set<uint32_t> keep_;  // Stalled flows to keep listed.
  std::vector<Entry> kept_;                   // Those still stalled.
  Heap largest_;                              // The top_n largest so far.
  Heap lagging_;                              // The top_n most lagging so far.
  FlowRanking out_;                           // Counts so far.
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_RANKING_H_
