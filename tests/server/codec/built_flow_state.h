// The reference of GetFlowState's answer: built field by field through
// protobuf, as the server did before its one encoder (the column encoder,
// server/codec/flow_state_columns.h). The tests compare the encoder with it
// and bench/encode_bench.cc times both.
#ifndef METASRV_TESTS_SERVER_CODEC_BUILT_FLOW_STATE_H_
#define METASRV_TESTS_SERVER_CODEC_BUILT_FLOW_STATE_H_

#include <cstdint>

#include "absl/types/span.h"
#include "core/flow_state_manager.h"
#include "metasrv/v1/metasrv.pb.h"

namespace metasrv::server {

// The flows of `ids` that exist (all when empty), with `with_nodes` the node
// columns too.
inline metasrv::v1::GetFlowStateResponse BuiltFlowState(
    const core::FlowStateManager& m, bool with_nodes,
    absl::Span<const uint32_t> ids = {}) {
  metasrv::v1::GetFlowStateResponse out;
  out.set_found(m.Visit(ids, [&](absl::Span<const core::AggregateFlow> flows) {
    for (const core::AggregateFlow& flow : flows) {
      out.add_flow_ids(flow.stat.flow_id);
      out.add_fields(flow.stat.fields);
      out.add_state_sizes(flow.stat.state_size);
      out.add_last_exec_times_ms(flow.stat.last_exec_time);
      out.add_start_times_ms(flow.stat.start_time);
      if (with_nodes) {
        out.add_state_size_nodes(flow.state_size_node);
        out.add_last_exec_time_nodes(flow.last_exec_time_node);
        out.add_start_time_nodes(flow.start_time_node);
      }
    }
  }));
  return out;
}

}  // namespace metasrv::server

#endif  // METASRV_TESTS_SERVER_CODEC_BUILT_FLOW_STATE_H_
