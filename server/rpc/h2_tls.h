// TLS for the nghttp2 transport: OpenSSL server contexts made from the PEM
// texts TlsIdentity checked (a matching pair only), ALPN "h2", and client
// certificates checked against a CA when one is set (mTLS). A new
// connection gets the newest context; the open ones keep theirs.
#ifndef METASRV_SERVER_RPC_H2_TLS_H_
#define METASRV_SERVER_RPC_H2_TLS_H_

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/ops/tls_identity.h"

namespace metasrv::server {

// An OpenSSL server context, shared by the connections made with it.
using SslContext = std::shared_ptr<SSL_CTX>;

// Thread safety: all of it, from any thread.
class H2Tls {
 public:
  // Serves `pem` (checked by CheckTlsIdentity) to new connections from now
  // on; the open ones keep theirs. kInvalidArgument naming the flag whose
  // PEM OpenSSL refused; the last context serves on.
  absl::Status Use(const TlsPem& pem) ABSL_LOCKS_EXCLUDED(mu_);
  // The context for a new connection; null before the first Use().
  SslContext Context() const ABSL_LOCKS_EXCLUDED(mu_);
  // A server-side TLS session on socket `fd` (non-blocking; not owned):
  // its writes never raise SIGPIPE (send with MSG_NOSIGNAL), since the
  // server may live in a process that does not ignore it.
  static SSL* NewSession(SSL_CTX* context, int fd);

 private:
  mutable absl::Mutex mu_;  // Guards context_.
  SslContext context_ ABSL_GUARDED_BY(mu_);
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_RPC_H2_TLS_H_
