// A unary call of a raw (bytes) method: the request decoded (zstd included,
// see request_decoder.h) into an arena, the response built on the same arena
// and serialized into the call's output when the handler finishes it.
#ifndef METASRV_SERVER_UNARY_CALL_H_
#define METASRV_SERVER_UNARY_CALL_H_

#include <cstddef>

#include <google/protobuf/arena.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include "absl/status/status.h"
#include "server/grpc_status.h"
#include "server/request_decoder.h"

namespace metasrv::server {

// Owns itself from Start() until Finish(), which deletes it; Finish() may be
// called from any thread, exactly once.
template <typename Request, typename Response>
class UnaryCall {
 public:
  // Decodes `raw` (at most `max_bytes` once inflated). Returns the call, or
  // null when the request does not decode: the call is then already
  // finished with the error. `*reactor` is what the handler returns.
  static UnaryCall* Start(grpc::CallbackServerContext* context,
                          const grpc::ByteBuffer* raw, grpc::ByteBuffer* out,
                          size_t max_bytes, grpc::ServerUnaryReactor** reactor) {
    *reactor = context->DefaultReactor();
    auto* call = new UnaryCall(context, *reactor, out);
    // gRPC hands the request as const; decoding may consume a copy (slices
    // are reference-counted, so the copy is cheap).
    grpc::ByteBuffer bytes(*raw);
    absl::Status decoded = DecodeRequest(&bytes, max_bytes, call->request_);
    if (!decoded.ok()) {
      call->Finish(decoded);
      return nullptr;
    }
    return call;
  }

  const Request& request() const { return *request_; }
  Response* response() { return response_; }
  grpc::CallbackServerContext* context() const { return context_; }

  // Sends the response (when `status` is OK) or the error, and deletes this.
  void Finish(const absl::Status& status) {
    grpc::Status result = ToGrpcStatus(status);
    if (result.ok()) {
      bool own = false;
      result = grpc::SerializationTraits<Response>::Serialize(*response_, out_, &own);
    }
    grpc::ServerUnaryReactor* reactor = reactor_;
    delete this;
    reactor->Finish(result);
  }

 private:
  UnaryCall(grpc::CallbackServerContext* context,
            grpc::ServerUnaryReactor* reactor, grpc::ByteBuffer* out)
      : context_(context),
        reactor_(reactor),
        out_(out),
        request_(google::protobuf::Arena::CreateMessage<Request>(&arena_)),
        response_(google::protobuf::Arena::CreateMessage<Response>(&arena_)) {}

  grpc::CallbackServerContext* const context_;  // The call; gRPC's.
  grpc::ServerUnaryReactor* const reactor_;     // Finishes the call; gRPC's.
  grpc::ByteBuffer* const out_;                 // The response bytes; gRPC's.
  google::protobuf::Arena arena_;               // Holds both messages.
  Request* const request_;                      // On arena_.
  Response* const response_;                    // On arena_.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_UNARY_CALL_H_
