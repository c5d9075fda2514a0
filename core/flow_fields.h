// Every per-flow field a flownode reports, declared once: one row of
// METASRV_FLOW_FIELDS. The rows are expanded (X-macros) into what each layer
// keeps of a field, so that adding upstream's next field is one row here and
// its proto fields:
//   - core/flow_state_value: the FlowField bit, FlowStat's member, the
//     Builder's setter;
//   - core/flow_aggregate: the per-field combine (FieldMax) and the node
//     that holds each maximum (AggregateFlow's <member>_node);
//   - core/flow_state_codec: the KV's JSON map;
//   - server/codec/flow_stat_wire: the FlowStat map a heartbeat carries;
//   - server/codec/flow_state_columns: the flow-state reply's packed columns;
//   - server/codec/heartbeat_request: the per-map flow count of a report.
// Code that means one field in particular (the rankings and alerts of
// core/flow_ranking, the start-time extension of a heartbeat) names it.
//
// A row: X(Name, member, type, bit, combine, json_key, json_required,
//          flow_stat_map, column, node_column)
//   Name           CamelCase: FlowField's k<Name>, Builder::Set<Name>.
//   member         FlowStat's member; AggregateFlow's <member>_node.
//   type           uint64_t or int64_t: its value, in JSON and on the wire
//                  (an int64 travels as its two's complement varint).
//   bit            its FlowField bit: which fields a flow has.
//   combine        how the aggregate combines the nodes' values: Max (the
//                  largest, and the node holding it: core/field_max.h). A new
//                  way (latest, sum) is a class beside FieldMax.
//   json_key       its map in the KV's JSON, GreptimeDB's name; the maps come
//                  in row order.
//   json_required  whether a JSON value without that map is refused (an
//                  older writer's value may lack a newer map).
//   flow_stat_map  greptime.v1.meta.FlowStat's map<uint32, type> field
//                  number; 0: a heartbeat carries it elsewhere.
//   column         metasrv.v1.GetFlowStateResponse's packed column of it;
//   node_column    and of the node holding each flow's value.
#ifndef METASRV_CORE_FLOW_FIELDS_H_
#define METASRV_CORE_FLOW_FIELDS_H_

// clang-format off
#define METASRV_FLOW_FIELD_ROWS(X)                                           \
  X(StateSize, state_size, uint64_t, 1, Max, "state_size", true, 1, 4, 7)    \
  X(LastExecTime, last_exec_time, int64_t, 2, Max, "last_exec_time_map",     \
    true, 2, 5, 8)                                                           \
  X(StartTime, start_time, int64_t, 4, Max, "start_time_map", false, 0, 6, 9)
// clang-format on

// The rows; a test build may add some of its own (METASRV_EXTRA_FLOW_FIELDS,
// tests/core/extra_flow_field_test.cc), which shows that one row is what a
// field takes.
#ifdef METASRV_EXTRA_FLOW_FIELDS
#define METASRV_FLOW_FIELDS(X) \
  METASRV_FLOW_FIELD_ROWS(X) METASRV_EXTRA_FLOW_FIELDS(X)
#else
#define METASRV_FLOW_FIELDS(X) METASRV_FLOW_FIELD_ROWS(X)
#endif

namespace metasrv::core {

// How many rows the table has.
#define METASRV_FLOW_FIELD_COUNT(...) +1
inline constexpr int kFlowFieldCount =
    0 METASRV_FLOW_FIELDS(METASRV_FLOW_FIELD_COUNT);
#undef METASRV_FLOW_FIELD_COUNT

}  // namespace metasrv::core

#endif  // METASRV_CORE_FLOW_FIELDS_H_
