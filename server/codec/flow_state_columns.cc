#include "server/codec/flow_state_columns.h"


#include <utility>

#include "core/flow_aggregate.h"

namespace metasrv::server {
namespace {

// Field numbers of metasrv.v1.GetFlowStateResponse; each flow field's
// columns are its row's (core/flow_fields.h).
constexpr uint32_t kFound = 1, kFlowIds = 2, kFields = 3;
constexpr uint32_t kVarint = 0, kLengthDelimited = 2;

size_t VarintSize(uint64_t value) {
  size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

// Writes the varint of `value` at `p`; returns the end.
inline char* WriteVarint(uint64_t value, char* p) {
  while (value >= 0x80) {
    *p++ = static_cast<char>(value | 0x80);
    value >>= 7;
  }
  *p++ = static_cast<char>(value);
  return p;
}

// Appends one packed run of field `field`: column(flow) for every flow,
// sized first and then written in place.
template <typename Column>
void AppendRun(uint32_t field, absl::Span<const core::AggregateFlow> flows,
               Column column, std::string* out) {
  size_t bytes = 0;
  for (const core::AggregateFlow& flow : flows) {
    bytes += VarintSize(column(flow));
  }
  AppendVarint(field << 3 | kLengthDelimited, out);
  AppendVarint(bytes, out);
  const size_t at = out->size();
  out->resize(at + bytes);
  char* p = out->data() + at;
  for (const core::AggregateFlow& flow : flows) p = WriteVarint(column(flow), p);
}

void AppendValueColumns(absl::Span<const core::AggregateFlow> flows,
                        std::string* out) {
  using core::AggregateFlow;
  AppendRun(
      kFlowIds, flows,
      [](const AggregateFlow& f) -> uint64_t { return f.stat.flow_id; }, out);
  AppendRun(
      kFields, flows,
      [](const AggregateFlow& f) -> uint64_t { return f.stat.fields; }, out);
  // int64 columns: negative values as their two's complement, as protobuf.
#define METASRV_FIELD_COLUMN(Name, member, type, bit, combine, key, required, \
                             flow_stat_map, column, node_column)              \
  AppendRun(                                                                  \
      column, flows,                                                          \
      [](const AggregateFlow& f) -> uint64_t {                                \
        return static_cast<uint64_t>(f.stat.member);                          \
      },                                                                      \
      out);
  METASRV_FLOW_FIELDS(METASRV_FIELD_COLUMN)
#undef METASRV_FIELD_COLUMN
}

}  // namespace

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

std::string EncodeColumnsChunk(absl::Span<const core::AggregateFlow> flows) {
  std::string out;
  out.reserve(flows.size() * 16 + 32);
  AppendValueColumns(flows, &out);
  return out;
}

std::string EncodeColumnsWithNodesChunk(
    absl::Span<const core::AggregateFlow> flows) {
  using core::AggregateFlow;
  std::string out;
  out.reserve(flows.size() * 24 + 48);
  AppendValueColumns(flows, &out);
#define METASRV_FIELD_NODE_COLUMN(Name, member, type, bit, combine, key,      \
                                  required, flow_stat_map, column,            \
                                  node_column)                                \
  AppendRun(                                                                  \
      node_column, flows,                                                     \
      [](const AggregateFlow& f) -> uint64_t { return f.member##_node; }, &out);
  METASRV_FLOW_FIELDS(METASRV_FIELD_NODE_COLUMN)
#undef METASRV_FIELD_NODE_COLUMN
  return out;
}

size_t EncodedFlowState::size() const {
  size_t bytes = found ? 2 : 0;  // The `found` field.
  for (const auto& chunk : chunks) bytes += chunk->size();
  return bytes;
}

namespace {

core::ChunkEncoding ColumnsEncoding(bool with_nodes) {
  return with_nodes ? kColumnsWithNodesSlot : kColumnsSlot;
}

// The answer of the manager's chunks (nullopt: no flow state).
EncodedFlowState FromChunks(
    std::optional<std::vector<std::shared_ptr<const std::string>>> chunks) {
  EncodedFlowState out;
  if (!chunks.has_value()) return out;
  out.found = true;
  out.chunks = *std::move(chunks);
  return out;
}

}  // namespace

EncodedFlowState EncodeFlowStateColumns(
    const core::FlowStateManager& flow_state, bool with_nodes) {
  return FromChunks(flow_state.EncodeChunks(
      ColumnsEncoding(with_nodes),
      with_nodes ? &EncodeColumnsWithNodesChunk : &EncodeColumnsChunk));
}

EncodedFlowState EncodeFlowStateColumns(
    const core::FlowStateManager& flow_state,
    absl::Span<const uint32_t> flow_ids, bool with_nodes) {
  EncodedFlowState out;
  out.found = flow_state.Visit(
      flow_ids, [&](absl::Span<const core::AggregateFlow> flows) {
        out.chunks.push_back(std::make_shared<const std::string>(
            with_nodes ? EncodeColumnsWithNodesChunk(flows)
                       : EncodeColumnsChunk(flows)));
      });
  return out;
}

EncodedFlowState EncodeFlowStateJson(
    const core::FlowStateManager& flow_state) {
  return FromChunks(flow_state.EncodeChunks(
      core::ChunkEncoding::kJson, &core::FlowAggregate::EncodeJsonChunk));
}

std::optional<EncodedFlowState> CachedFlowStateColumns(
    const core::FlowStateManager& flow_state, bool with_nodes) {
  std::optional<std::vector<std::shared_ptr<const std::string>>> chunks;
  if (!flow_state.CachedChunks(ColumnsEncoding(with_nodes), &chunks)) {
    return std::nullopt;
  }
  return FromChunks(std::move(chunks));
}

SharedPieces ToPieces(const EncodedFlowState& state, std::string prefix) {
  if (state.found) {
    AppendVarint(kFound << 3 | kVarint, &prefix);
    AppendVarint(1, &prefix);
  }
  SharedPieces pieces;
  pieces.reserve(state.chunks.size() + 1);
  if (!prefix.empty()) {
    pieces.push_back(
        SharedBytes::Of(std::make_shared<const std::string>(std::move(prefix))));
  }
  for (const auto& chunk : state.chunks) pieces.push_back(SharedBytes::Of(chunk));
  return pieces;
}

}  // namespace metasrv::server
