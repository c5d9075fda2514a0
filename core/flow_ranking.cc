#include "core/flow_ranking.h"

#include <algorithm>

namespace metasrv::core {

FlowRanker::FlowRanker(absl::Time now, size_t top_n, absl::Duration stall_after,
                       std::vector<double> lag_buckets,
                       absl::flat_hash_set<uint32_t> keep)
    : now_ms_(absl::ToUnixMillis(now)),
      top_n_(top_n),
      stall_after_seconds_(absl::ToDoubleSeconds(stall_after)),
      lag_buckets_(std::move(lag_buckets)),
      keep_(std::move(keep)) {
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
    const bool stalled = lag > stall_after_seconds_;
    if (stalled && kept_.size() < top_n_ && keep_.contains(stat.flow_id)) {
      kept_.push_back({lag, stat.flow_id, r});
    } else {
      Offer(&lagging_, {lag, stat.flow_id, r});
    }
    if (stalled) ++out_.stalled;
    // Counted in its own bucket here; made cumulative in Finish().
    const size_t bucket =
        std::lower_bound(lag_buckets_.begin(), lag_buckets_.end(), lag) -
        lag_buckets_.begin();
    ++out_.lag_cumulative[bucket];
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
  // The kept stalled flows, then the most lagging others in what is left.
  std::vector<RankedFlow> others = Drain(&lagging_);
  for (const Entry& e : kept_) out_.most_lagging.push_back(e.flow);
  for (const RankedFlow& f : others) {
    if (out_.most_lagging.size() == top_n_) break;
    out_.most_lagging.push_back(f);
  }
  std::stable_sort(out_.most_lagging.begin(), out_.most_lagging.end(),
                   [](const RankedFlow& a, const RankedFlow& b) {
                     if (a.lag_seconds != b.lag_seconds)
                       return a.lag_seconds > b.lag_seconds;
                     return a.flow_id < b.flow_id;
                   });
  for (const RankedFlow& f : out_.most_lagging) {
    if (f.lag_seconds > stall_after_seconds_) {
      out_.stalled_listed.insert(f.flow_id);
    }
  }
  for (size_t i = 1; i < out_.lag_cumulative.size(); ++i) {
    out_.lag_cumulative[i] += out_.lag_cumulative[i - 1];
  }
  return std::move(out_);
}

}  // namespace metasrv::core
