// The cluster-wide flow-state aggregate, kept incrementally, and read as
// immutable per-chunk views so that a read of any size is one instant.
#ifndef METASRV_CORE_FLOW_AGGREGATE_H_
#define METASRV_CORE_FLOW_AGGREGATE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/types/span.h"
#include "core/field_max.h"
#include "core/flow_state_codec.h"
#include "core/flow_state_value.h"
#include "kv/mutex.h"

namespace metasrv::core {

// One flow of the aggregate, with the node that holds each field's max.
struct AggregateFlow {
  FlowStat stat;  // The per-field maxima.
  // <member>_node per row of flow_fields.h: the node holding its value.
#define METASRV_FIELD_NODE(Name, member, ...) uint64_t member##_node = 0;
  METASRV_FLOW_FIELDS(METASRV_FIELD_NODE)
#undef METASRV_FIELD_NODE
};

// Turns one chunk's flows (ascending by id) into bytes. Must be a pure
// function of its input: views cache what it returns.
using ChunkEncoder = std::string (*)(absl::Span<const AggregateFlow> flows);

// The encodings of the aggregate that views cache, one slot each: the KV's
// own, and slots for encodings its readers define (each reader names the
// slot it uses; one encoder per slot).
enum class ChunkEncoding : int {
  kJson = 0,         // The KV's `__flow/state` JSON members.
  kReaderSlot1 = 1,  // A reader's encoding.
  kReaderSlot2 = 2,  // Another reader's encoding.
};
inline constexpr int kChunkEncodings = 3;

// The flows of one chunk (1024 consecutive flow ids) at one instant, as the
// aggregate's readers see them. A view that a reader holds (PinnedChunk)
// never changes: a change to its chunk makes a new view. Thread-safe.
class ChunkView {
 public:
  uint32_t chunk_id() const { return chunk_id_; }
  // Differs between any two states of one aggregate's chunk (never 0).
  uint64_t version() const { return version_; }
  // Ascending by id; never empty.
  absl::Span<const AggregateFlow> flows() const { return flows_; }

  // flows() encoded by `encoder`, which must be the same for an encoding
  // every time: made on the first call for that encoding, then cached.
  std::shared_ptr<const std::string> Encoded(ChunkEncoding encoding,
                                             ChunkEncoder encoder) const;
  // The bytes of `encoding` if made already, else null (nothing is made).
  std::shared_ptr<const std::string> Cached(ChunkEncoding encoding) const;

 private:
  friend class FlowAggregate;
  friend class PinnedChunk;

  uint32_t chunk_id_ = 0;             // Which chunk.
  uint64_t version_ = 0;              // Which state of it.
  std::vector<AggregateFlow> flows_;  // Its flows, ascending by id.
  // Readers holding it. Raised under the aggregate owner's shared lock and
  // lowered (release) by readers; the writer, under the exclusive lock,
  // changes the view in place only when it reads (acquire) zero.
  mutable std::atomic<int64_t> pins_{0};
  mutable Mutex mu_;  // Guards encoded_.
  // Per encoding, the bytes of flows_; null until made.
  mutable std::array<std::shared_ptr<const std::string>, kChunkEncodings>
      encoded_ ABSL_GUARDED_BY(mu_);
};

// A reader's hold on a view: while it lives the view stays as it is, even
// after the aggregate moved on or was dropped. Move-only.
class PinnedChunk {
 public:
  PinnedChunk() = default;
  PinnedChunk(PinnedChunk&& other) noexcept = default;
  PinnedChunk& operator=(PinnedChunk&& other) noexcept;
  PinnedChunk(const PinnedChunk&) = delete;
  PinnedChunk& operator=(const PinnedChunk&) = delete;
  ~PinnedChunk() { Release(); }

  const ChunkView& operator*() const { return *view_; }
  const ChunkView* operator->() const { return view_.get(); }

 private:
  friend class FlowAggregate;
  explicit PinnedChunk(std::shared_ptr<const ChunkView> view);
  void Release();

  std::shared_ptr<const ChunkView> view_;  // Pinned; null when moved from.
};

// Per flow, the max of each field over all nodes' reports.
//
// Replace() costs O(report size * log) and never looks at other nodes'
// flows. Flows are grouped in chunks of 1024 consecutive ids, and each chunk
// keeps a ChunkView of its flows. Snapshot() pins every chunk's view in
// O(chunks), so an owner that shares the aggregate between threads holds its
// lock only for that, whatever the size of the read, and the reader then
// reads, or encodes, one instant's flows without the lock. A change to a
// chunk whose view is pinned copies the view first (O(chunk)); otherwise it
// changes the view in place. Each view caches its encodings
// (ChunkView::Encoded), so an encoding of an unchanged aggregate is the
// cached chunks.
//
// Not thread-safe: the owner serializes access (const methods may run
// concurrently with each other, and pinned views may be used from any
// thread).
class FlowAggregate {
 public:
  FlowAggregate() = default;
  FlowAggregate(FlowAggregate&&) = default;
  FlowAggregate& operator=(FlowAggregate&&) = default;

  // Replaces `node`'s contribution `old_report` with `new_report`. The caller
  // keeps each node's reports.
  void Replace(uint64_t node, const FlowStateValue& old_report,
               const FlowStateValue& new_report);

  // Every chunk's view, pinned, ascending by chunk id: the whole aggregate
  // at this instant. O(chunks).
  std::vector<PinnedChunk> Snapshot() const;
  // The views of the chunks that hold any of `sorted_ids` (ascending).
  std::vector<PinnedChunk> Snapshot(
      absl::Span<const uint32_t> sorted_ids) const;

  // The flows of `sorted_ids` (ascending, unique) found in `chunks` (a
  // Snapshot), ascending; all of their flows when `sorted_ids` is empty.
  static std::vector<AggregateFlow> Select(
      absl::Span<const PinnedChunk> chunks,
      absl::Span<const uint32_t> sorted_ids);

  // How many of `sorted_ids` (ascending, unique) are in the aggregate.
  uint64_t CountPresent(absl::Span<const uint32_t> sorted_ids) const;

  // The JSON of `__flow/state` from kJson chunk encodings, in order
  // (flow_state_codec.h).
  static std::string AssembleJson(
      absl::Span<const std::shared_ptr<const std::string>> chunks);
  // The JSON encoder of one chunk.
  static std::string EncodeJsonChunk(absl::Span<const AggregateFlow> flows);
  // The JSON of `chunks` (a Snapshot), each chunk's part cached.
  static std::string EncodeJson(absl::Span<const PinnedChunk> chunks);

  // Flows in the aggregate now.
  uint64_t flow_count() const { return flow_count_; }

 private:
  // How one flow's maxima are kept; the maxima themselves (and who holds
  // them) are its entry in the chunk's view.
  struct FlowSlot {
    // Field<combine><type> per row of flow_fields.h.
#define METASRV_FIELD_SLOT(Name, member, type, bit, combine, ...) \
  Field##combine<type> member;
    METASRV_FLOW_FIELDS(METASRV_FIELD_SLOT)
#undef METASRV_FIELD_SLOT
    bool empty() const {
#define METASRV_FIELD_EMPTY(Name, member, ...) &&member.empty()
      return true METASRV_FLOW_FIELDS(METASRV_FIELD_EMPTY);
#undef METASRV_FIELD_EMPTY
    }
  };

  // Flows whose ids share the same id >> kChunkBits, in a vector sorted by
  // id: contiguous, and since flow ids are dense, entry `id % 1024` is
  // usually the one sought (see Find). Entry i of `slots` is entry i of the
  // view's flows.
  struct Chunk {
    using Slots = std::vector<std::pair<uint32_t, FlowSlot>>;
    // The index of `id`'s entry, or where it would be inserted.
    size_t Find(uint32_t id) const;

    Slots slots;                      // Sorted by id.
    std::shared_ptr<ChunkView> view;  // Its flows as readers see them.
  };

  static constexpr int kChunkBits = 10;

  // `chunk`'s view, ready for a change: a copy if a reader pins it, with a
  // new version and no encodings.
  ChunkView& ChangeView(uint32_t chunk_id, Chunk& chunk);
  // Applies one flow's change in `chunk` and its view.
  void ApplyFlow(Chunk& chunk, ChunkView& view, uint64_t node,
                 const FlowStat* old_stat, const FlowStat* new_stat);

  absl::btree_map<uint32_t, Chunk> chunks_;  // Non-empty chunks by id.
  uint64_t next_version_ = 0;                // Last view version given.
  uint64_t flow_count_ = 0;                  // Flows with at least one field.
};

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_AGGREGATE_H_
