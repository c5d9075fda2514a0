// GreptimeDB's not-leader answer in a greptime.v1.meta response header. No
// gRPC here: the heartbeat logic (and so the fuzzer) uses it too.
#ifndef METASRV_SERVER_RPC_NOT_LEADER_H_
#define METASRV_SERVER_RPC_NOT_LEADER_H_

#include "core/leadership.h"
#include "greptime/v1/meta/common.pb.h"

namespace metasrv::server {

// Fills `header` as a follower's answer, as upstream's: protocol version 1
// and the error core::kNotLeaderErrorCode with core::kNotLeaderText. The
// leader it knows of goes to the log (debug, rate-limited), not the answer.
void SetNotLeader(const core::Leadership& leadership,
                  greptime::v1::meta::ResponseHeader* header);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_NOT_LEADER_H_
