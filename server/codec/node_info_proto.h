// core::NodeInfo to and from GreptimeDB's greptime.v1.meta.NodeInfo.
#ifndef METASRV_SERVER_CODEC_NODE_INFO_PROTO_H_
#define METASRV_SERVER_CODEC_NODE_INFO_PROTO_H_

#include "core/flownode_record.h"
#include "greptime/v1/meta/common.pb.h"

namespace metasrv::server {

// Field by field, with the generated accessors (the fields are
// core::ForEachNodeInfoField's list; a test holds the two to each other).
// Never fail.
core::NodeInfo FromProto(const greptime::v1::meta::NodeInfo& proto);
void ToProto(const core::NodeInfo& info, greptime::v1::meta::NodeInfo* proto);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_CODEC_NODE_INFO_PROTO_H_
