// The one place where absl::Status becomes grpc::Status.
#ifndef METASRV_SERVER_RPC_GRPC_STATUS_H_
#define METASRV_SERVER_RPC_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace metasrv::server {

// Same canonical code, same message without surrounding whitespace. Every
// status the server sends goes through here.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_GRPC_STATUS_H_
