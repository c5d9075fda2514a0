#include "server/ops/tls_identity.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/ops/small_file.h"
#include "server/ops/threads.h"
#include "spdlog/spdlog.h"

namespace metasrv::server {
namespace {

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
using Cert = std::unique_ptr<X509, decltype(&X509_free)>;
using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

Bio MemoryBio(const std::string& text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())),
             BIO_free);
}

// An encrypted key is refused rather than prompted for on the terminal.
int NoPassphrase(char*, int, int, void*) { return 0; }

Cert FirstCertificate(const std::string& pem) {
  Bio bio = MemoryBio(pem);
  return Cert(PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr),
              X509_free);
}

// "CN=..., valid until Mon DD HH:MM:SS YYYY GMT", for the log.
std::string Describe(const std::string& cert_pem) {
  Cert cert = FirstCertificate(cert_pem);
  ERR_clear_error();
  if (cert == nullptr) return "?";
  char subject[256] = {};
  X509_NAME_oneline(X509_get_subject_name(cert.get()), subject,
                    sizeof(subject));
  Bio out(BIO_new(BIO_s_mem()), BIO_free);
  ASN1_TIME_print(out.get(), X509_get0_notAfter(cert.get()));
  char* text = nullptr;
  const long n = BIO_get_mem_data(out.get(), &text);
  return absl::StrCat(subject, ", valid until ",
                      std::string(text, n > 0 ? static_cast<size_t>(n) : 0));
}

// The certificate's notAfter, unix seconds; 0 if it cannot be read.
double NotAfter(const std::string& cert_pem) {
  Cert cert = FirstCertificate(cert_pem);
  ERR_clear_error();
  if (cert == nullptr) return 0;
  int days = 0, seconds = 0;
  // From the epoch (a null "from" is now; the epoch is a fixed point).
  ASN1_TIME* epoch = ASN1_TIME_set(nullptr, 0);
  const bool ok = ASN1_TIME_diff(&days, &seconds, epoch,
                                 X509_get0_notAfter(cert.get())) == 1;
  ASN1_TIME_free(epoch);
  return ok ? static_cast<double>(days) * 86400 + seconds : 0;
}

bool Same(const TlsPem& a, const TlsPem& b) {
  return a.cert == b.cert && a.key == b.key && a.client_ca == b.client_ca;
}

}  // namespace

absl::Status CheckTlsIdentity(const TlsPem& pem, const TlsPaths& paths) {
  Cert leaf = FirstCertificate(pem.cert);
  if (leaf == nullptr) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_cert: ", paths.cert, " holds no PEM certificate"));
  }
  Bio key_bio = MemoryBio(pem.key);
  Key key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, NoPassphrase, nullptr),
      EVP_PKEY_free);
  if (key == nullptr) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls_key: ", paths.key,
        " holds no PEM private key (or an encrypted one, which the server "
        "cannot open)"));
  }
  if (X509_check_private_key(leaf.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls_cert and --tls_key do not belong together: the key in ",
        paths.key, " is not the key of the certificate in ", paths.cert,
        " (every TLS handshake would fail)"));
  }
  if (!pem.client_ca.empty() && FirstCertificate(pem.client_ca) == nullptr) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls_client_ca: ", paths.client_ca, " holds no PEM certificate"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TlsIdentity>> TlsIdentity::Create(
    TlsPaths configured, TlsPem first, absl::Duration period, Install install,
    Metrics* metrics) {
  if (absl::Status installed = install(first); !installed.ok()) {
    return installed;
  }
  std::unique_ptr<TlsIdentity> identity(new TlsIdentity(
      std::move(configured), std::move(first), std::move(install), metrics));
  {
    absl::MutexLock lock(&identity->mu_);
    identity->metrics_->TlsServing(NotAfter(identity->served_.cert));
  }
  identity->refresher_ =
      StartThread(ThreadRole::kTlsRefresh,
                  [raw = identity.get(), period] { raw->RefreshLoop(period); });
  return identity;
}

TlsIdentity::TlsIdentity(TlsPaths configured, TlsPem first, Install install,
                         Metrics* metrics)
    : configured_(std::move(configured)),
      install_(std::move(install)),
      metrics_(Metrics::OrDiscard(metrics)),
      served_(std::move(first)) {}

TlsIdentity::~TlsIdentity() {
  {
    absl::MutexLock lock(&stop_mu_);
    stopping_ = true;
  }
  if (refresher_.joinable()) refresher_.join();
}

void TlsIdentity::RefreshLoop(absl::Duration period) {
  while (true) {
    {
      absl::MutexLock lock(&stop_mu_);
      if (stop_mu_.AwaitWithTimeout(absl::Condition(&stopping_), period)) {
        return;
      }
    }
    Refresh().IgnoreError();  // Logged and counted there.
  }
}

absl::Status TlsIdentity::Refresh() {
  TlsPem now;
  absl::Status read = absl::OkStatus();
  for (auto [path, text, flag] :
       {std::tuple{&configured_.cert, &now.cert, "--tls_cert"},
        std::tuple{&configured_.key, &now.key, "--tls_key"},
        std::tuple{&configured_.client_ca, &now.client_ca,
                   "--tls_client_ca"}}) {
    if (path->empty() || !read.ok()) continue;
    absl::StatusOr<std::string> got = ReadSmallFile(*path, flag);
    if (got.ok()) {
      *text = *std::move(got);
    } else {
      read = got.status();
    }
  }
  absl::MutexLock lock(&mu_);
  if (read.ok() && Same(now, served_)) return absl::OkStatus();
  absl::Status checked = read.ok() ? CheckTlsIdentity(now, configured_) : read;
  if (checked.ok()) checked = install_(now);
  if (!checked.ok()) {
    // A rotation writes its files one after another: the first refresh
    // between the two sees a torn pair. Only a pair seen twice, one
    // refresh apart, is refused.
    if (read.ok() && !Same(now, torn_)) {
      torn_ = now;
      return checked;
    }
    if (!Same(now, refused_)) {
      refused_ = now;
      metrics_->TlsRotated(false);
      spdlog::warn(
          "TLS: the changed certificate files are not served ({}); still "
          "serving the previous certificate ({})",
          std::string(checked.message()), Describe(served_.cert));
    }
    return checked;
  }
  served_ = std::move(now);
  refused_ = TlsPem();
  torn_ = TlsPem();
  metrics_->TlsRotated(true);
  metrics_->TlsServing(NotAfter(served_.cert));
  spdlog::info("TLS: serving the renewed certificate from {} ({})",
               configured_.cert, Describe(served_.cert));
  return absl::OkStatus();
}

}  // namespace metasrv::server
