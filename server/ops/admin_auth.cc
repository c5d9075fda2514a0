#include "server/ops/admin_auth.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace metasrv::server {
namespace {

// Compares without an early exit, so timing does not reveal a prefix match.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

}  // namespace

absl::StatusOr<AdminAuth> AdminAuth::FromToken(absl::string_view text,
                                               absl::string_view where) {
  std::string token(absl::StripAsciiWhitespace(text));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the admin token in ", where, " is empty"));
  }
  // A token a client could never present is refused now, not at the first
  // admin call: it travels in an HTTP/2 header, so visible ASCII only, and
  // small enough for gRPC's metadata limit (8 KiB for all headers).
  if (token.size() > kMaxTokenBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the admin token in ", where, " is ", token.size(), " bytes; at most ",
        kMaxTokenBytes, " fit in a gRPC header"));
  }
  for (size_t i = 0; i < token.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(
          absl::StrCat("the admin token in ", where,
                       " has a byte that cannot travel in a "
                       "header (",
                       static_cast<int>(c), " at offset ", i,
                       "): use visible ASCII, e.g. openssl rand -hex 32"));
    }
  }
  if (token.size() < kMinTokenBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the admin token in ", where, " is ", token.size(), " bytes; at least ",
        kMinTokenBytes, " are needed (e.g. openssl rand -hex 32)"));
  }
  AdminAuth auth;
  auth.token_ = std::move(token);
  return auth;
}

absl::Status AdminAuth::Check(absl::string_view authorization,
                              bool from_loopback) const {
  if (!token_.has_value()) {
    if (from_loopback) return absl::OkStatus();
    return absl::PermissionDeniedError(
        "admin calls are accepted only from loopback when no admin token is "
        "configured");
  }
  absl::string_view presented = authorization;
  if (!absl::ConsumePrefix(&presented, "Bearer ") || presented.empty()) {
    return absl::UnauthenticatedError(
        "admin call needs 'authorization: Bearer <token>'");
  }
  if (!ConstantTimeEquals(presented, *token_)) {
    return absl::PermissionDeniedError("wrong admin token");
  }
  return absl::OkStatus();
}

}  // namespace metasrv::server
