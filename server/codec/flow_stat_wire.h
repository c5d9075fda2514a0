// greptime.v1.meta.FlowStat as it arrives on the wire, decoded straight into
// a report builder: no protobuf maps are built for a heartbeat's report.
#ifndef METASRV_SERVER_CODEC_FLOW_STAT_WIRE_H_
#define METASRV_SERVER_CODEC_FLOW_STAT_WIRE_H_

#include "absl/strings/string_view.h"
#include "core/flow_state_value.h"

namespace metasrv::server {

// Adds the flows of one encoded FlowStat (`bytes`: the payload of a
// HeartbeatRequest.flow_stat field) to `builder`: each entry of a field's
// map (its row's flow_stat_map in core/flow_fields.h) as that field's value,
// in wire order, so that for a flow given twice the later wins, as it does
// in protobuf's maps.
//
// The result is always what protobuf's own parse of a FlowStat would give:
// - true: the bytes parse; `builder` holds their entries, exactly the
//   entries of the maps protobuf would build (keys truncated to 32 bits,
//   missing keys and values 0, unknown fields ignored).
// - false: protobuf would refuse the bytes (a truncated or overlong varint,
//   a length past the end, a bad wire type, an unmatched group...);
//   `builder` is as it was.
// Entries of the one shape every encoder writes (a tag byte, a length, a key
// and a value as varints) are read directly; bytes with anything else in
// them are handed to protobuf's parser as they are, and what it parsed is
// read again in that shape.
//
// Thread-compatible: touches nothing but `builder`.
bool DecodeFlowStat(absl::string_view bytes,
                    core::FlowStateValue::Builder* builder);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CODEC_FLOW_STAT_WIRE_H_
