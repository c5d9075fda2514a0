// What adding a flow field takes: one row of core/flow_fields.h. This test
// build adds upstream's next field (processed rows, as GreptimeDB's #8454
// asks) as a row and compiles core's flow-state value, aggregate and JSON
// codec with it, unchanged: the value holds it, the aggregate keeps its
// maximum and the node holding it, the KV's JSON has its map, and a value
// written before the field existed still decodes. (On the wire it would
// also need its FlowStat map and reply columns in proto/, the numbers its
// row gives; the decoder and the column encoder follow the row.)
#define METASRV_EXTRA_FLOW_FIELDS(X)                                         \
  X(ProcessedRows, processed_rows, uint64_t, 8, Max, "processed_rows_map",   \
    false, 3, 10, 11)

// Core's sources, compiled here with the extra row (not linked from
// metasrv_core, which has the shipped rows only).
#include "core/flow_aggregate.cc"     // NOLINT(build/include)
#include "core/flow_state_codec.cc"   // NOLINT(build/include)
#include "core/flow_state_value.cc"   // NOLINT(build/include)

#include <string>

#include "gtest/gtest.h"

namespace metasrv::core {
namespace {

static_assert(kFlowFieldCount == 4);

TEST(ExtraFlowFieldTest, OneRowIsCarriedByTheValueTheAggregateAndTheJson) {
  FlowStateValue one = FlowStateValue::Builder()
                           .SetStateSize(1, 100)
                           .SetProcessedRows(1, 5)
                           .SetProcessedRows(2, 7)
                           .Build();
  FlowStateValue two =
      FlowStateValue::Builder().SetProcessedRows(1, 9).Build();
  ASSERT_NE(one.Find(1), nullptr);
  EXPECT_TRUE(one.Find(1)->has(kProcessedRows));
  EXPECT_EQ(one.Find(1)->processed_rows, 5u);

  // The JSON: the new map last, in the table's order; and back.
  const std::string json = EncodeFlowState(one);
  EXPECT_EQ(json,
            R"({"state_size":{"1":100},"last_exec_time_map":{},)"
            R"("start_time_map":{},"processed_rows_map":{"1":5,"2":7}})");
  absl::StatusOr<FlowStateValue> back = DecodeFlowState(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, one);
  // A value written before the field existed: its map is not required.
  absl::StatusOr<FlowStateValue> old = DecodeFlowState(
      R"({"state_size":{"1":3},"last_exec_time_map":{},"start_time_map":{}})");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_FALSE(old->Find(1)->has(kProcessedRows));
  // Its values are checked as its type says.
  absl::StatusOr<FlowStateValue> negative = DecodeFlowState(
      R"({"state_size":{},"last_exec_time_map":{},"processed_rows_map":{"1":-1}})");
  EXPECT_FALSE(negative.ok());
  EXPECT_NE(std::string(negative.status().message())
                .find("negative value in \"processed_rows_map\""),
            std::string::npos);

  // The aggregate: the largest of the nodes' values, and who holds it.
  FlowAggregate aggregate;
  aggregate.Replace(10, FlowStateValue(), one);
  aggregate.Replace(20, FlowStateValue(), two);
  std::vector<AggregateFlow> flows;
  for (const PinnedChunk& chunk : aggregate.Snapshot()) {
    for (const AggregateFlow& f : chunk->flows()) flows.push_back(f);
  }
  ASSERT_EQ(flows.size(), 2u);
  EXPECT_EQ(flows[0].stat.processed_rows, 9u);
  EXPECT_EQ(flows[0].processed_rows_node, 20u);
  EXPECT_EQ(flows[0].stat.state_size, 100u);
  EXPECT_EQ(flows[1].stat.processed_rows, 7u);
  // Node 20 leaves: node 10's value is the maximum again.
  aggregate.Replace(20, two, FlowStateValue());
  flows.clear();
  for (const PinnedChunk& chunk : aggregate.Snapshot()) {
    for (const AggregateFlow& f : chunk->flows()) flows.push_back(f);
  }
  EXPECT_EQ(flows[0].stat.processed_rows, 5u);
  EXPECT_EQ(flows[0].processed_rows_node, 10u);
}

}  // namespace
}  // namespace metasrv::core
