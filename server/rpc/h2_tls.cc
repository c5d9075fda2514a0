#include "server/rpc/h2_tls.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdint>

#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {
namespace {

// ALPN: "h2" if the client offers it; a client that offers none is served
// too (HTTP/2 with prior knowledge over TLS).
int SelectH2(SSL*, const unsigned char** out, unsigned char* outlen,
             const unsigned char* in, unsigned int inlen, void*) {
  for (unsigned int i = 0; i < inlen; i += 1 + in[i]) {
    const unsigned int length = in[i];
    if (i + 1 + length > inlen) break;
    if (length == 2 && in[i + 1] == 'h' && in[i + 2] == '2') {
      *out = in + i + 1;
      *outlen = 2;
      return SSL_TLSEXT_ERR_OK;
    }
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;  // Offers, but not h2: not gRPC.
}

// A socket BIO whose writes pass MSG_NOSIGNAL.
int SocketOf(BIO* bio) {
  return static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(bio)));
}
int BioWrite(BIO* bio, const char* data, int size) {
  BIO_clear_retry_flags(bio);
  const ssize_t n = send(SocketOf(bio), data, size, MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    BIO_set_retry_write(bio);
  }
  return static_cast<int>(n);
}
int BioRead(BIO* bio, char* data, int size) {
  BIO_clear_retry_flags(bio);
  const ssize_t n = recv(SocketOf(bio), data, size, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    BIO_set_retry_read(bio);
  }
  return static_cast<int>(n);
}
long BioCtrl(BIO*, int cmd, long, void*) {  // NOLINT(runtime/int)
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}
int BioCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}
BIO_METHOD* SocketMethod() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                                 "metasrv socket");
    BIO_meth_set_write(m, &BioWrite);
    BIO_meth_set_read(m, &BioRead);
    BIO_meth_set_ctrl(m, &BioCtrl);
    BIO_meth_set_create(m, &BioCreate);
    return m;
  }();
  return method;
}

}  // namespace

SSL* H2Tls::NewSession(SSL_CTX* context, int fd) {
  SSL* ssl = SSL_new(context);
  BIO* bio = BIO_new(SocketMethod());
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
  SSL_set_bio(ssl, bio, bio);  // The session owns it.
  SSL_set_accept_state(ssl);
  return ssl;
}

absl::StatusOr<std::unique_ptr<H2Tls>> H2Tls::Create(Files files) {
  absl::StatusOr<SslContext> context = Build(files);
  if (!context.ok()) return context.status();
  std::string stamp = Stamp(files);
  return std::unique_ptr<H2Tls>(
      new H2Tls(std::move(files), *std::move(context), std::move(stamp)));
}

absl::StatusOr<SslContext> H2Tls::Build(const Files& files) {
  SslContext context(SSL_CTX_new(TLS_server_method()), &SSL_CTX_free);
  if (context == nullptr) return absl::InternalError("SSL_CTX_new failed");
  SSL_CTX* ctx = context.get();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  if (SSL_CTX_use_certificate_chain_file(ctx, files.cert.c_str()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot use the certificate chain in ", files.cert));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, files.key.c_str(), SSL_FILETYPE_PEM) !=
          1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot use the private key in ", files.key));
  }
  if (!files.client_ca.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, files.client_ca.c_str(),
                                      nullptr) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot use the client CA in ", files.client_ca));
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                       nullptr);
  }
  SSL_CTX_set_alpn_select_cb(ctx, &SelectH2, nullptr);
  return context;
}

std::string H2Tls::Stamp(const Files& files) {
  std::string stamp;
  for (const std::string* path : {&files.cert, &files.key, &files.client_ca}) {
    struct stat st {};
    if (path->empty() || stat(path->c_str(), &st) != 0) {
      stamp += "-;";
      continue;
    }
    absl::StrAppend(&stamp, st.st_ino, ":", st.st_size, ":",
                    st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, ";");
  }
  return stamp;
}

SslContext H2Tls::Context() const {
  absl::MutexLock lock(&mu_);
  return context_;
}

void H2Tls::Refresh() {
  const std::string stamp = Stamp(files_);
  {
    absl::MutexLock lock(&mu_);
    if (stamp == stamp_) return;
  }
  absl::StatusOr<SslContext> context = Build(files_);
  if (!context.ok()) {
    // A rotation caught between its writes: the next refresh tries again.
    spdlog::debug("TLS context not renewed: {}", context.status().ToString());
    return;
  }
  absl::MutexLock lock(&mu_);
  context_ = *std::move(context);
  stamp_ = stamp;
}

}  // namespace metasrv::server
