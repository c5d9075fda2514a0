#include "core/flow_ranking.h"

#include <algorithm>

namespace metasrv::core {

FlowRanker::FlowRanker(absl::Time now, size_t top_n, absl::Duration stall_after,
                       std::vector<double> lag_buckets)
    : now_ms_(absl::ToUnixMillis(now)),
      top_n_(top_n),
      stall_after_seconds_(absl::ToDoubleSeconds(stall_after)),
      lag_buckets_(std::move(lag_buckets)) {
  out_.lag_cumulative.assign(lag_buckets_.size() + 1, 0);
}

void FlowRanker::Offer(Heap* heap, Entry entry) {
  if (top_n_ == 0) return;
  if (heap->size() < top_n_) {
    heap->push(std::move(entry));
  } else if (Worse()(entry, heap->top())) {
    heap->pop();
    heap->push(std::move(entry));
  }
}

void FlowRanker::Add(const AggregateFlow& flow) {
  const FlowStat& stat = flow.stat;
  ++out_.flows;
  if (stat.has(FlowField::kStateSize)) {
    RankedFlow r;
    r.flow_id = stat.flow_id;
    r.state_size = stat.state_size;
    r.node = flow.state_size_node;
    Offer(&largest_, {static_cast<double>(stat.state_size), stat.flow_id, r});
  }
  if (stat.has(FlowField::kLastExecTime)) {
    const double lag =
        std::max<int64_t>(0, now_ms_ - stat.last_exec_time) / 1000.0;
    RankedFlow r;
    r.flow_id = stat.flow_id;
    r.last_exec_time = stat.last_exec_time;
    r.lag_seconds = lag;
    r.node = flow.last_exec_time_node;
    Offer(&lagging_, {lag, stat.flow_id, r});
    if (lag > stall_after_seconds_) ++out_.stalled;
    // Counted in its own bucket here; made cumulative in Finish().
    const size_t bucket =
        std::lower_bound(lag_buckets_.begin(), lag_buckets_.end(), lag) -
        lag_buckets_.begin();
    ++out_.lag_cumulative[bucket];
    out_.lag_sum += lag;
    ++out_.lag_count;
  }
}

std::vector<RankedFlow> FlowRanker::Drain(Heap* heap) {
  std::vector<RankedFlow> out(heap->size());
  for (size_t i = out.size(); i > 0; --i) {
    out[i - 1] = heap->top().flow;
    heap->pop();
  }
  return out;
}

FlowRanking FlowRanker::Finish() {
  out_.largest = Drain(&largest_);
  out_.most_lagging = Drain(&lagging_);
  for (size_t i = 1; i < out_.lag_cumulative.size(); ++i) {
    out_.lag_cumulative[i] += out_.lag_cumulative[i - 1];
  }
  return std::move(out_);
}

}  // namespace metasrv::core
