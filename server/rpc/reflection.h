// gRPC server reflection, both versions: grpc.reflection.v1 (what current
// grpcurl and buf curl ask first) and v1alpha (older tools), the same
// messages under two packages, answered from protobuf's generated descriptor
// pool by stream handlers on the transport's loops (no thread per open
// stream).
//
// Bounded: a name in a request (file, symbol, type, host) longer than
// kMaxReflectionName is refused without being echoed; a request is echoed
// back (`original_request`) only when it is small; a request is held to
// --max_message_bytes like any other; every answer is charged through the
// door (CallDoor::TakeReply: its host's share, then the reply budget) until
// the client has read it, and one that does not fit ends the stream with
// RESOURCE_EXHAUSTED.
#ifndef METASRV_SERVER_RPC_REFLECTION_H_
#define METASRV_SERVER_RPC_REFLECTION_H_

#include <string>
#include <utility>
#include <vector>

#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "server/rpc/call_dispatcher.h"
#include "server/rpc/unary_call.h"

namespace metasrv::server {

// The longest name a reflection request may carry.
inline constexpr size_t kMaxReflectionName = 1024;
// The largest request echoed back in `original_request`.
inline constexpr size_t kMaxEchoedRequest = 4096;

// One version's service. Thread-safe.
template <typename Service, typename Request, typename Response>
class ReflectionService final {
 public:
  // Lists `services` (the dispatcher's limits hold its calls, and every
  // answer is charged through the door as the other methods' are).
  explicit ReflectionService(std::vector<std::string> services)
      : services_(std::move(services)) {}

  // Serves ServerReflectionInfo through `dispatcher`.
  void Register(CallDispatcher* dispatcher);

  // The answer to one request.
  Response Answer(const Request& request) const;

 private:
  const std::vector<std::string> services_;  // Registered services.
};

using ReflectionV1Service =
    ReflectionService<grpc::reflection::v1::ServerReflection,
                      grpc::reflection::v1::ServerReflectionRequest,
                      grpc::reflection::v1::ServerReflectionResponse>;
using ReflectionV1alphaService =
    ReflectionService<grpc::reflection::v1alpha::ServerReflection,
                      grpc::reflection::v1alpha::ServerReflectionRequest,
                      grpc::reflection::v1alpha::ServerReflectionResponse>;

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_REFLECTION_H_
