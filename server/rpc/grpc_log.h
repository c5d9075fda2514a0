// gRPC core's own log lines, routed into spdlog.
#ifndef METASRV_SERVER_RPC_GRPC_LOG_H_
#define METASRV_SERVER_RPC_GRPC_LOG_H_

#include <cstdint>

#include "absl/time/time.h"

namespace metasrv::server {

// From now on, gRPC core logs through spdlog's default logger (same format,
// same level): its errors as warnings (they are about peers: a failed TLS
// handshake, a header it does not know), its info as debug. A line from one
// place in gRPC's code is written at most once per `interval`; the next one
// says how many were left out, so a peer that fails every call cannot
// flood the log. (gRPC serves no port: these are its clients' lines, the
// etcd election's among them.)
void RouteGrpcLogsToSpdlog(absl::Duration interval = absl::Seconds(10));

// Lines left out by the rate limit so far (gRPC core's and the server's own
// per-request lines, log_limit.h).
uint64_t GrpcLogLinesSuppressed();

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_GRPC_LOG_H_
