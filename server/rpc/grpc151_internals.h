// The one place this server reaches into gRPC's internals, because Debian
// 12's gRPC (1.51) gives no public way to do two things it needs:
//
// - Core batches on a C++ completion queue. The heartbeat stream sends an
//   answer and receives the next request in one grpc_call_start_batch (one
//   completion per heartbeat), on the same queue as the C++ async API's
//   operations. A tag that queue hands back must be a
//   grpc::internal::CompletionQueueTag, which lives under impl/codegen/ in
//   1.51 and is marked for removal there.
// - Protobuf messages into byte buffers the way gRPC itself writes them
//   (grpc::SerializationTraits for protobuf), whose header is
//   impl/codegen/proto_utils.h in 1.51.
//
// On an upgrade of gRPC, this is the file to revisit: where the queue
// accepts plain tags for core batches, CqTag's base goes; where the
// serialization traits have a public header, the include moves.
// The other compensations for 1.51 are named alike: grpc151_acceptor (its
// listener dies at the first EMFILE) and grpc151_zstd_requests (zstd
// requests are passed on still compressed).
#ifndef METASRV_SERVER_RPC_GRPC151_INTERNALS_H_
#define METASRV_SERVER_RPC_GRPC151_INTERNALS_H_

#include <grpcpp/impl/codegen/completion_queue_tag.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

namespace metasrv::server {

// An operation in flight. Pass AsTag() as the tag of a C++ async operation
// or of a core batch: either way the poller calls Complete().
class CqTag : public grpc::internal::CompletionQueueTag {
 public:
  // The operation completed; `ok` is gRPC's success bit. Runs on a poller
  // thread, which it must not block.
  virtual void Complete(bool ok) = 0;

  // This tag as the C++ async API and core batches take it (the queue
  // hands a core batch's tag to FinalizeResult(), which returns it as is).
  void* AsTag() {
    return static_cast<grpc::internal::CompletionQueueTag*>(this);
  }
  // The tag a poller got back from the queue.
  static CqTag* From(void* tag) {
    return static_cast<CqTag*>(
        static_cast<grpc::internal::CompletionQueueTag*>(tag));
  }

 private:
  bool FinalizeResult(void** tag, bool* /*status*/) final {
    *tag = AsTag();
    return true;
  }
};

// `message` as gRPC writes a protobuf message into `out` (replacing it).
template <typename Message>
grpc::Status SerializeMessage(const Message& message, grpc::ByteBuffer* out) {
  bool own = false;
  return grpc::SerializationTraits<Message>::Serialize(message, out, &own);
}

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_GRPC151_INTERNALS_H_
