// The server's TLS identity (certificate chain, private key, client CA) as
// gRPC serves it: checked before it is served, and rotated only to a pair
// that matches.
#ifndef METASRV_SERVER_OPS_TLS_IDENTITY_H_
#define METASRV_SERVER_OPS_TLS_IDENTITY_H_

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

// Serves the last good identity to gRPC through private copies of the
// files, which gRPC's file watcher reads; the configured files are re-read
// every `period` on its own thread (and by Refresh()), and copied over only
// when they form a matching pair. A mismatched or unreadable rotation keeps
// the last good pair serving: it is logged as a warning (once per content)
// and counted; a good one is logged and counted
// (metasrv_tls_rotations_total{result}).
//
// Thread safety: all methods are safe from any thread.
class TlsIdentity {
 public:
  // `first` is what the configured files held at start, already checked
  // (CheckTlsIdentity). Makes a private directory (mode 0700) under
  // $TMPDIR or /tmp for the copies; kUnavailable if it cannot. `metrics`
  // is borrowed and may be null.
  static absl::StatusOr<std::unique_ptr<TlsIdentity>> Create(
      TlsPaths configured, TlsPem first, absl::Duration period,
      Metrics* metrics);
  ~TlsIdentity();  // Stops its thread; removes the copies.

  // The copies gRPC reads ("" for the client CA when none is used).
  const std::string& cert_path() const { return served_paths_.cert; }
  const std::string& key_path() const { return served_paths_.key; }
  const std::string& client_ca_path() const { return served_paths_.client_ca; }

  // Re-reads the configured files; installs them if they changed and
  // match. Returns OK when serving what the files hold (changed or not),
  // else why the files are not served.
  absl::Status Refresh() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  TlsIdentity(TlsPaths configured, TlsPaths served, TlsPem first,
              std::string dir, Metrics* metrics);
  // Writes `pem` over the copies, each file by rename.
  absl::Status Install(const TlsPem& pem) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RefreshLoop(absl::Duration period) ABSL_LOCKS_EXCLUDED(stop_mu_);

  const TlsPaths configured_;    // What the flags name.
  const TlsPaths served_paths_;  // The copies gRPC reads.
  const std::string dir_;        // Holds the copies; ours.
  Metrics* const metrics_;       // Counts rotations; borrowed.

  absl::Mutex mu_;                      // One Refresh() at a time.
  TlsPem served_ ABSL_GUARDED_BY(mu_);  // What the copies hold.
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
