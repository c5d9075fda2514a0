// The cluster-wide flow-state aggregate, kept incrementally.
#ifndef METASRV_CORE_FLOW_AGGREGATE_H_
#define METASRV_CORE_FLOW_AGGREGATE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include <utility>
#include "kv/mutex.h"
#include "absl/types/span.h"
#include "core/field_max.h"
#include "core/flow_state_codec.h"
#include "core/flow_state_value.h"

namespace metasrv::core {

// One flow of the aggregate, with the node that holds each field's max.
struct AggregateFlow {
  FlowStat stat;                    // The per-field maxima.
  uint64_t state_size_node = 0;     // Node with the max state size.
  uint64_t last_exec_time_node = 0; // Node with the max last execution time.
  uint64_t start_time_node = 0;     // Node with the max start time.
};

// Per flow, the max of each field over all nodes' reports.
//
// Replace() costs O(report size * log) and never looks at other nodes' flows.
// The JSON of the whole aggregate is built on read: flows are grouped in chunks
// of 1024 consecutive ids, each chunk caches its encoded members until one of
// its flows changes, so a read re-encodes only chunks that changed.
//
// Thread safety: all methods are safe to call concurrently. Each chunk has its
// own lock, so a reader encoding one chunk blocks only writers of that chunk.
// A read concurrent with Replace() sees every flow either before or after it,
// but not necessarily all flows of one Replace() at the same moment.
class FlowAggregate {
 public:
  FlowAggregate() = default;
  FlowAggregate(const FlowAggregate&) = delete;
  FlowAggregate& operator=(const FlowAggregate&) = delete;

  // Replaces `node`'s contribution `old_report` with `new_report`. The caller
  // keeps each node's reports and must not replace one node concurrently.
  void Replace(uint64_t node, const FlowStateValue& old_report,
               const FlowStateValue& new_report);

  // The aggregate as JSON (see flow_state_codec.h).
  std::string EncodeJson() const;

  // Calls `visit` with the aggregate's flows in batches, ascending by id;
  // with `flow_ids` non-empty, only those of them that exist. `visit` must not
  // call back into the aggregate.
  using Visitor = std::function<void(absl::Span<const AggregateFlow>)>;
  void Visit(absl::Span<const uint32_t> flow_ids, const Visitor& visit) const;

  // Visit() into a vector.
  std::vector<AggregateFlow> Read(absl::Span<const uint32_t> flow_ids) const;

  // Flows in the aggregate now.
  uint64_t flow_count() const {
    return flow_count_.load(std::memory_order_relaxed);
  }

 private:
  // One flow's maxima.
  struct FlowSlot {
    FieldMax<uint64_t> state_size;     // Max state size.
    FieldMax<int64_t> last_exec_time;  // Max last execution time.
    FieldMax<int64_t> start_time;      // Max start time.
    bool empty() const {
      return state_size.empty() && last_exec_time.empty() && start_time.empty();
    }
    AggregateFlow ToFlow(uint32_t flow_id) const;
  };

  // Flows whose ids share the same id >> kChunkBits, in a vector sorted by
  // id: contiguous, and since flow ids are dense, entry `id % 1024` is
  // usually the one sought (see Find).
  struct Chunk {
    using Flows = std::vector<std::pair<uint32_t, FlowSlot>>;
    // The entry of `id`, or where it would be inserted.
    Flows::iterator Find(uint32_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

    mutable Mutex mu;  // Guards the fields below.
    Flows flows ABSL_GUARDED_BY(mu);  // Sorted by id.
    // Encoded members of `flows`; null when a flow changed since encoding.
    mutable std::shared_ptr<const FlowStateJsonParts> json ABSL_GUARDED_BY(mu);
  };

  static constexpr int kChunkBits = 10;

  // Returns the chunk of `chunk_id`, creating it.
  Chunk* GetOrCreateChunk(uint32_t chunk_id);
  // Applies one flow's change in `chunk`.
  void ApplyFlow(Chunk& chunk, uint64_t node, const FlowStat* old_stat,
                 const FlowStat* new_stat) ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk.mu);

  // Guards the chunk directory. Chunks are never removed, so a Chunk* stays
  // valid for the aggregate's lifetime.
  mutable Mutex dir_mu_;
  absl::btree_map<uint32_t, std::unique_ptr<Chunk>> chunks_
      ABSL_GUARDED_BY(dir_mu_);       // Chunks by chunk id.
  std::atomic<uint64_t> flow_count_{0};  // Flows with at least one field.
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_AGGREGATE_H_
