// What the server's completion queue hands back: one interface for the
// operations started through gRPC's C++ async API and for the core batches
// started with grpc_call_start_batch.
#ifndef METASRV_SERVER_RPC_CQ_TAG_H_
#define METASRV_SERVER_RPC_CQ_TAG_H_

#include <grpcpp/impl/codegen/completion_queue_tag.h>

namespace metasrv::server {

// An operation in flight. Pass `this` as the tag of a C++ async operation
// (AsTag()) or of a core batch (the queue calls FinalizeResult(), which
// returns it as is): either way the poller calls Complete().
class CqTag : public grpc::internal::CompletionQueueTag {
 public:
  // The operation completed; `ok` is gRPC's success bit. Runs on a poller
  // thread, which it must not block.
  virtual void Complete(bool ok) = 0;

  // This tag as the C++ async API takes it.
  void* AsTag() { return static_cast<CqTag*>(this); }
  // The tag a poller got back from the queue.
  static CqTag* From(void* tag) { return static_cast<CqTag*>(tag); }

 private:
  bool FinalizeResult(void** tag, bool* /*status*/) final {
    *tag = AsTag();
    return true;
  }
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_CQ_TAG_H_
