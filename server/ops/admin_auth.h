// Who may call mutating admin RPCs.
#ifndef METASRV_SERVER_OPS_ADMIN_AUTH_H_
#define METASRV_SERVER_OPS_ADMIN_AUTH_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace metasrv::server {

// With a token: a call must carry `authorization: Bearer <token>`. Without
// one: only calls from loopback peers are accepted. Errors never contain a
// token. Thread-safe (immutable after construction).
class AdminAuth {
 public:
  // No token: loopback only.
  AdminAuth() = default;
  // The shortest and longest tokens accepted. 16 bytes: a short token is
  // found by guessing (a 2-byte one in 0.03 s at 9,000 tries a second, before
  // the door slowed failures); `openssl rand -hex 32` gives 64.
  static constexpr size_t kMinTokenBytes = 16;
  static constexpr size_t kMaxTokenBytes = 4096;

  // The token `text` holds (surrounding whitespace dropped), as read from
  // `where` (a file's name, for messages). kInvalidArgument if it is
  // shorter than kMinTokenBytes (a half-written file, too), longer than
  // kMaxTokenBytes or holds anything but visible ASCII; the
  // message never holds the token.
  static absl::StatusOr<AdminAuth> FromToken(absl::string_view text,
                                             absl::string_view where);

  // OK to proceed. kUnauthenticated: no bearer token; kPermissionDenied: the
  // wrong token, or no token configured and the call is not `from_loopback`
  // (PeerAddress::loopback).
  absl::Status Check(absl::string_view authorization,
                     bool from_loopback) const;

 private:
  std::optional<std::string> token_;  // The expected token, when configured.
};

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_ADMIN_AUTH_H_
