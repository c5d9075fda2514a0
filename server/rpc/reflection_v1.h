// grpc.reflection.v1.ServerReflection: what current grpcurl and buf curl ask
// first. gRPC C++ 1.51 serves only v1alpha (its plugin stays registered for
// older tools); v1 has the same messages under a new package, answered here
// from protobuf's generated descriptor pool.
#ifndef METASRV_SERVER_RPC_REFLECTION_V1_H_
#define METASRV_SERVER_RPC_REFLECTION_V1_H_

#include <string>
#include <vector>

#include "grpc/reflection/v1/reflection.grpc.pb.h"

namespace metasrv::server {

class ReflectionV1Service final
    : public grpc::reflection::v1::ServerReflection::CallbackService {
 public:
  // `services`: the full names `list_services` answers.
  explicit ReflectionV1Service(std::vector<std::string> services)
      : services_(std::move(services)) {}

  grpc::ServerBidiReactor<grpc::reflection::v1::ServerReflectionRequest,
                          grpc::reflection::v1::ServerReflectionResponse>*
  ServerReflectionInfo(grpc::CallbackServerContext* context) override;

  // The answer to one request. Thread-safe.
  grpc::reflection::v1::ServerReflectionResponse Answer(
      const grpc::reflection::v1::ServerReflectionRequest& request) const;

 private:
  const std::vector<std::string> services_;  // Registered services.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_REFLECTION_V1_H_
