// TLS for the nghttp2 transport: OpenSSL server contexts made from PEM
// files (TlsIdentity's copies, which hold only a matching pair), ALPN "h2",
// and client certificates checked against a CA when one is set (mTLS). A
// new connection gets the newest context; Refresh() makes a new one when
// the files changed, and the open connections keep theirs.
#ifndef METASRV_SERVER_RPC_H2_TLS_H_
#define METASRV_SERVER_RPC_H2_TLS_H_

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace metasrv::server {

// An OpenSSL server context, shared by the connections made with it.
using SslContext = std::shared_ptr<SSL_CTX>;

// Thread safety: all of it, from any thread.
class H2Tls {
 public:
  struct Files {
    std::string cert, key, client_ca;  // client_ca empty: no mTLS.
  };
  // A context from `files`; kInvalidArgument naming the file OpenSSL
  // refused.
  static absl::StatusOr<std::unique_ptr<H2Tls>> Create(Files files);

  // The context for a new connection.
  SslContext Context() const ABSL_LOCKS_EXCLUDED(mu_);
  // A server-side TLS session on socket `fd` (non-blocking; not owned):
  // its writes never raise SIGPIPE (send with MSG_NOSIGNAL), since the
  // server may live in a process that does not ignore it.
  static SSL* NewSession(SSL_CTX* context, int fd);
  // Makes a new context if the files changed since the last one; a
  // context that cannot be made leaves the last one serving.
  void Refresh() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  H2Tls(Files files, SslContext context, std::string stamp)
      : files_(std::move(files)),
        context_(std::move(context)),
        stamp_(std::move(stamp)) {}
  static absl::StatusOr<SslContext> Build(const Files& files);
  // What the files are now (mtimes, sizes, inodes): changes when any does.
  static std::string Stamp(const Files& files);

  const Files files_;
  mutable absl::Mutex mu_;  // Guards the fields below.
  SslContext context_ ABSL_GUARDED_BY(mu_);
  std::string stamp_ ABSL_GUARDED_BY(mu_);  // Of the files context_ is of.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_H2_TLS_H_
