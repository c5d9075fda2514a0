// The server's TLS identity (certificate chain, private key, client CA) as
// the gRPC port serves it: checked before it is served, and rotated only to
// a pair that matches.
#ifndef METASRV_SERVER_OPS_TLS_IDENTITY_H_
#define METASRV_SERVER_OPS_TLS_IDENTITY_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/ops/metrics.h"

namespace metasrv::server {

// PEM texts of one identity, and the files (flags) they came from, for
// messages.
struct TlsPem {
  std::string cert, key, client_ca;  // client_ca: empty when not used.
};
struct TlsPaths {
  std::string cert, key, client_ca;
};

// OK if `pem.cert` holds at least one certificate, `pem.key` a private key
// that belongs to the first certificate (the leaf), and `pem.client_ca`, if
// set, at least one certificate. kInvalidArgument naming the files and
// what is wrong otherwise. Thread-safe; reads nothing but its arguments.
absl::Status CheckTlsIdentity(const TlsPem& pem, const TlsPaths& paths);

// Serves the last good identity: what the configured files held at start,
// then each rotation that forms a matching pair. The files are re-read every
// `period` on its own thread (and by Refresh()). A mismatched or unreadable
// rotation keeps the last good pair serving: it is logged as a warning
// (once per content) and counted; a good one is logged and counted
// (metasrv_tls_rotations_total{result}).
//
// Thread safety: all methods are safe from any thread.
class TlsIdentity {
 public:
  // Where a good identity goes (the transport's contexts); an error means
  // it is not served.
  using Install = std::function<absl::Status(const TlsPem&)>;

  // `first` is what the configured files held at start, already checked
  // (CheckTlsIdentity); it is installed at once (its error returned).
  // `metrics` is borrowed and may be null.
  static absl::StatusOr<std::unique_ptr<TlsIdentity>> Create(
      TlsPaths configured, TlsPem first, absl::Duration period, Install install,
      Metrics* metrics);
  ~TlsIdentity();  // Stops its thread.

  // Re-reads the configured files; installs them if they changed and
  // match. Returns OK when serving what the files hold (changed or not),
  // else why the files are not served.
  absl::Status Refresh() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  TlsIdentity(TlsPaths configured, TlsPem first, Install install,
              Metrics* metrics);
  void RefreshLoop(absl::Duration period) ABSL_LOCKS_EXCLUDED(stop_mu_);

  const TlsPaths configured_;  // What the flags name.
  const Install install_;      // As given.
  Metrics* const metrics_;     // Counts rotations; borrowed.

  absl::Mutex mu_;                      // One Refresh() at a time.
  TlsPem served_ ABSL_GUARDED_BY(mu_);  // What was installed last.
  // The last content refused (so that it is warned of once).
  TlsPem refused_ ABSL_GUARDED_BY(mu_);
  // Files that did not make a pair at the last refresh: refused only if
  // the next one finds them so still (a rotation between its two writes).
  TlsPem torn_ ABSL_GUARDED_BY(mu_);

  absl::Mutex stop_mu_;  // Guards stopping_.
  bool stopping_ ABSL_GUARDED_BY(stop_mu_) = false;
  std::thread refresher_;  // Runs RefreshLoop(); joined by the destructor.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_TLS_IDENTITY_H_
