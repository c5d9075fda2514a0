#include "server/rpc/h2_tls.h"

#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include <utility>

namespace metasrv::server {
namespace {

// ALPN: "h2" if the client offers it (nghttp2 chooses); a client that
// offers none is served too (HTTP/2 with prior knowledge over TLS).
int SelectH2(SSL*, const unsigned char** out, unsigned char* outlen,
             const unsigned char* in, unsigned int inlen, void*) {
  unsigned char* chosen = nullptr;
  if (nghttp2_select_next_protocol(&chosen, outlen, in, inlen) != 1) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;  // Offers, but not h2: not gRPC.
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
Bio MemoryBio(const std::string& text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())),
             BIO_free);
}

// An encrypted key is refused rather than prompted for on the terminal.
int NoPassphrase(char*, int, int, void*) { return 0; }

}  // namespace

SSL* H2Tls::NewSession(SSL_CTX* context, int fd) {
  SSL* ssl = SSL_new(context);
  // On the socket itself: SIGPIPE is ignored once, by the transport.
  SSL_set_fd(ssl, fd);
  SSL_set_accept_state(ssl);
  return ssl;
}

absl::Status H2Tls::Use(const TlsPem& pem) {
  SslContext context(SSL_CTX_new(TLS_server_method()), &SSL_CTX_free);
  if (context == nullptr) return absl::InternalError("SSL_CTX_new failed");
  SSL_CTX* ctx = context.get();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  // The leaf, then the rest of the chain, as a chain file is read.
  Bio certs = MemoryBio(pem.cert);
  X509* leaf = PEM_read_bio_X509(certs.get(), nullptr, nullptr, nullptr);
  bool ok = leaf != nullptr && SSL_CTX_use_certificate(ctx, leaf) == 1;
  X509_free(leaf);
  while (ok) {
    X509* next = PEM_read_bio_X509(certs.get(), nullptr, nullptr, nullptr);
    if (next == nullptr) break;
    ok = SSL_CTX_add0_chain_cert(ctx, next) == 1;  // Takes it on success.
    if (!ok) X509_free(next);
  }
  Bio key_bio = MemoryBio(pem.key);
  EVP_PKEY* key = ok ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr,
                                               NoPassphrase, nullptr)
                     : nullptr;
  const bool key_ok = key != nullptr && SSL_CTX_use_PrivateKey(ctx, key) == 1 &&
                      SSL_CTX_check_private_key(ctx) == 1;
  EVP_PKEY_free(key);
  int authorities = 0;
  if (!pem.client_ca.empty()) {
    Bio ca = MemoryBio(pem.client_ca);
    STACK_OF(X509_INFO)* infos =
        PEM_X509_INFO_read_bio(ca.get(), nullptr, nullptr, nullptr);
    for (int i = 0; infos != nullptr && i < sk_X509_INFO_num(infos); ++i) {
      X509* cert = sk_X509_INFO_value(infos, i)->x509;
      if (cert != nullptr &&
          X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), cert) == 1) {
        ++authorities;
      }
    }
    sk_X509_INFO_pop_free(infos, X509_INFO_free);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                       nullptr);
  }
  ERR_clear_error();  // The chain's end reads as an error.
  if (!ok) return absl::InvalidArgumentError("--tls_cert: unusable chain");
  if (!key_ok) return absl::InvalidArgumentError("--tls_key: unusable key");
  if (!pem.client_ca.empty() && authorities == 0) {
    return absl::InvalidArgumentError("--tls_client_ca: no usable CA");
  }
  SSL_CTX_set_alpn_select_cb(ctx, &SelectH2, nullptr);
  absl::MutexLock lock(&mu_);
  context_ = std::move(context);
  return absl::OkStatus();
}

SslContext H2Tls::Context() const {
  absl::MutexLock lock(&mu_);
  return context_;
}

}  // namespace metasrv::server
