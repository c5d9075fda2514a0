#include "server/election/etcd_client.h"

#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kv/kv_backend.h"

namespace metasrv::server {
namespace {

void SetTimeout(grpc::ClientContext* ctx, absl::Duration timeout) {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    absl::ToChronoMilliseconds(timeout));
}

// Whether etcd refused the call's token. It says so with UNAUTHENTICATED
// from its KV and Lease services, but its Election service passes the same
// error on as UNKNOWN: known by its message, whatever the code.
bool RefusedToken(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
         absl::StrContains(status.error_message(), "invalid auth token") ||
         absl::StrContains(status.error_message(), "auth token is expired");
}

}  // namespace

EtcdClient::EtcdClient(std::vector<std::string> endpoints,
                       EtcdSecurity security,
                       absl::Duration keepalive_timeout)
    : security_(std::move(security)), password_(security_.password) {
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::InsecureChannelCredentials();
  if (security_.tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = security_.ca_pem;
    ssl.pem_cert_chain = security_.cert_pem;
    ssl.pem_private_key = security_.key_pem;
    credentials = grpc::SslCredentials(ssl);
  }
  for (const std::string& addr : endpoints) {
    Endpoint e;
    e.address = addr;
    grpc::ChannelArguments args;
    // Reconnect quickly after etcd comes back: the election waits on it.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS,
                static_cast<int>(absl::ToInt64Milliseconds(kKeepaliveTime)));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                static_cast<int>(absl::ToInt64Milliseconds(keepalive_timeout)));
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    // Pings without data in between: gRPC allows two by default, then
    // stops pinging an idle connection.
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    e.channel = grpc::CreateCustomChannel(addr, credentials, args);
    e.lease = etcdserverpb::Lease::NewStub(e.channel);
    e.kv = etcdserverpb::KV::NewStub(e.channel);
    e.election = v3electionpb::Election::NewStub(e.channel);
    e.auth = etcdserverpb::Auth::NewStub(e.channel);
    endpoints_.push_back(std::move(e));
  }
}

absl::Status EtcdClient::Authorize(grpc::ClientContext* ctx,
                                   absl::Duration timeout) {
  if (security_.username.empty()) return absl::OkStatus();
  std::string token;
  std::string password;
  {
    absl::MutexLock lock(&mu_);
    token = token_;
    password = password_;
  }
  if (token.empty()) {
    grpc::ClientContext auth_ctx;
    SetTimeout(&auth_ctx, timeout);
    etcdserverpb::AuthenticateRequest req;
    req.set_name(security_.username);
    req.set_password(password);
    etcdserverpb::AuthenticateResponse resp;
    const grpc::Status s = Current().auth->Authenticate(&auth_ctx, req, &resp);
    if (!s.ok()) {
      // A refused password stays refused: not a reason to retry.
      if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
          s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
        return absl::FailedPreconditionError(
            absl::StrCat("etcd refused user '", security_.username,
                         "': ", s.error_message()));
      }
      return Check(s);
    }
    token = resp.token();
    absl::MutexLock lock(&mu_);
    token_ = token;
  }
  ctx->AddMetadata("token", token);
  return absl::OkStatus();
}

absl::Status EtcdClient::CheckAccess(absl::Duration timeout) {
  grpc::ClientContext ctx;
  SetTimeout(&ctx, timeout);
  absl::Status s = Authorize(&ctx, timeout);
  if (s.ok()) {
    etcdserverpb::RangeRequest req;
    req.set_key("__metasrv_access_check");
    etcdserverpb::RangeResponse resp;
    s = Check(Current().kv->Range(&ctx, req, &resp));
  }
  if (s.ok()) {
    // etcd's peer port answers KV and Lease calls but not the Election
    // service; asked, it answers UNIMPLEMENTED (as any other gRPC server
    // would). "election: no leader" is the answer of a client endpoint.
    grpc::ClientContext leader_ctx;
    SetTimeout(&leader_ctx, timeout);
    s = Authorize(&leader_ctx, timeout);
    if (s.ok()) {
      v3electionpb::LeaderRequest req;
      req.set_name("__metasrv_access_check");
      v3electionpb::LeaderResponse resp;
      s = Check(Current().election->Leader(&leader_ctx, req, &resp));
      if (!s.ok() && !absl::IsUnimplemented(s) && !absl::IsUnavailable(s) &&
          !absl::IsDeadlineExceeded(s)) {
        s = absl::OkStatus();  // No leader there: it answers the API.
      }
    }
  }
  if (absl::IsUnimplemented(s)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--store_addrs: ", Current().address,
        " is not an etcd client endpoint (it does not serve etcd's Election "
        "API: ",
        s.message(),
        "); is it etcd's peer port (2380)? Name the client URLs' ports "
        "(2379)"));
  }
  // gRPC reports a failed TLS handshake as UNAVAILABLE; it will not heal.
  if (absl::IsUnavailable(s) &&
      (absl::StrContains(s.message(), "andshake") ||
       absl::StrContains(s.message(), "SSL") ||
       absl::StrContains(s.message(), "certificate"))) {
    return absl::FailedPreconditionError(
        absl::StrCat("TLS with etcd failed (check the CA and the client "
                     "certificate): ",
                     s.message()));
  }
  return s;
}

void EtcdClient::SetPassword(std::string password) {
  absl::MutexLock lock(&mu_);
  password_ = std::move(password);
}

EtcdClient::Endpoint& EtcdClient::Current() {
  absl::MutexLock lock(&mu_);
  return endpoints_[current_];
}

absl::Status EtcdClient::Check(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  auto code = status.error_code();
  const bool bad_token = RefusedToken(status);
  if (bad_token) {
    // Expired (or etcd restarted): log in again on the next call, which the
    // caller may make at once.
    absl::MutexLock lock(&mu_);
    token_.clear();
    code = grpc::StatusCode::UNAVAILABLE;
  }
  if (!bad_token && (code == grpc::StatusCode::UNAVAILABLE ||
                     code == grpc::StatusCode::DEADLINE_EXCEEDED)) {
    absl::MutexLock lock(&mu_);
    current_ = (current_ + 1) % endpoints_.size();
  }
  return absl::Status(static_cast<absl::StatusCode>(code),
                      absl::StrCat("etcd: ", status.error_message()));
}

template <typename Call>
absl::Status EtcdClient::Unary(absl::Duration timeout, Call call) {
  for (int attempt = 0;; ++attempt) {
    grpc::ClientContext ctx;
    SetTimeout(&ctx, timeout);
    if (absl::Status a = Authorize(&ctx, timeout); !a.ok()) return a;
    const grpc::Status status = call(Current(), &ctx);
    absl::Status checked = Check(status);
    if (attempt > 0 || !RefusedToken(status)) return checked;
  }
}

absl::StatusOr<int64_t> EtcdClient::LeaseGrant(absl::Duration ttl,
                                               absl::Duration timeout) {
  etcdserverpb::LeaseGrantRequest req;
  req.set_ttl(absl::ToInt64Seconds(absl::Ceil(ttl, absl::Seconds(1))));
  etcdserverpb::LeaseGrantResponse resp;
  absl::Status s = Unary(timeout, [&](Endpoint& e, grpc::ClientContext* ctx) {
    return e.lease->LeaseGrant(ctx, req, &resp);
  });
  if (!s.ok()) return s;
  if (!resp.error().empty()) {
    return absl::UnavailableError(
        absl::StrCat("etcd lease grant: ", resp.error()));
  }
  return resp.id();
}

absl::Status EtcdClient::LeaseRevoke(int64_t lease, absl::Duration timeout) {
  etcdserverpb::LeaseRevokeRequest req;
  req.set_id(lease);
  etcdserverpb::LeaseRevokeResponse resp;
  return Unary(timeout, [&](Endpoint& e, grpc::ClientContext* ctx) {
    return e.lease->LeaseRevoke(ctx, req, &resp);
  });
}

absl::StatusOr<EtcdClient::LeaseTtl> EtcdClient::LeaseTimeToLive(
    int64_t lease, absl::Duration timeout) {
  etcdserverpb::LeaseTimeToLiveRequest req;
  req.set_id(lease);
  etcdserverpb::LeaseTimeToLiveResponse resp;
  absl::Status s = Unary(timeout, [&](Endpoint& e, grpc::ClientContext* ctx) {
    return e.lease->LeaseTimeToLive(ctx, req, &resp);
  });
  // etcd 3.4 answers a lease it no longer has with TTL -1; others with
  // NOT_FOUND ("requested lease not found").
  if (s.ok() && resp.ttl() < 0) {
    s = absl::NotFoundError(absl::StrCat("etcd lease ", lease, " is gone"));
  }
  if (!s.ok()) return s;
  return LeaseTtl{absl::Seconds(resp.ttl()), absl::Seconds(resp.grantedttl())};
}

absl::StatusOr<absl::Duration> EtcdClient::LeaseKeepAlive(
    int64_t lease, absl::Duration timeout) {
  // One request and its answer on a short-lived stream, so that the deadline
  // bounds the whole exchange.
  grpc::ClientContext ctx;
  SetTimeout(&ctx, timeout);
  if (absl::Status a = Authorize(&ctx, timeout); !a.ok()) return a;
  auto stream = Current().lease->LeaseKeepAlive(&ctx);
  etcdserverpb::LeaseKeepAliveRequest req;
  req.set_id(lease);
  etcdserverpb::LeaseKeepAliveResponse resp;
  const bool exchanged = stream->Write(req) && stream->Read(&resp);
  stream->WritesDone();
  if (!exchanged) {
    ctx.TryCancel();
    grpc::Status s = stream->Finish();
    return Check(s.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                       "keep-alive stream closed")
                        : s);
  }
  ctx.TryCancel();
  stream->Finish().IgnoreError();
  if (resp.ttl() <= 0) {
    return absl::NotFoundError(absl::StrCat("etcd lease ", lease, " is gone"));
  }
  return absl::Seconds(resp.ttl());
}

absl::StatusOr<v3electionpb::LeaderKey> EtcdClient::Campaign(
    const std::string& name, int64_t lease, const std::string& value,
    grpc::ClientContext* context) {
  if (absl::Status a = Authorize(context, absl::Seconds(5)); !a.ok()) return a;
  v3electionpb::CampaignRequest req;
  req.set_name(name);
  req.set_lease(lease);
  req.set_value(value);
  v3electionpb::CampaignResponse resp;
  absl::Status s = Check(Current().election->Campaign(context, req, &resp));
  if (!s.ok()) return s;
  return resp.leader();
}

absl::Status EtcdClient::Resign(const v3electionpb::LeaderKey& leader,
                                absl::Duration timeout) {
  v3electionpb::ResignRequest req;
  *req.mutable_leader() = leader;
  v3electionpb::ResignResponse resp;
  return Unary(timeout, [&](Endpoint& e, grpc::ClientContext* ctx) {
    return e.election->Resign(ctx, req, &resp);
  });
}

absl::Status EtcdClient::Put(const std::string& key, const std::string& value,
                             int64_t lease, absl::Duration timeout) {
  etcdserverpb::PutRequest req;
  req.set_key(key);
  req.set_value(value);
  req.set_lease(lease);
  etcdserverpb::PutResponse resp;
  return Unary(timeout, [&](Endpoint& e, grpc::ClientContext* ctx) {
    return e.kv->Put(ctx, req, &resp);
  });
}

absl::StatusOr<std::vector<mvccpb::KeyValue>> EtcdClient::RangePrefix(
    const std::string& prefix, absl::Duration timeout) {
  etcdserverpb::RangeRequest req;
  req.set_key(prefix);
  req.set_range_end(kv::PrefixEnd(prefix));
  etcdserverpb::RangeResponse resp;
  absl::Status s = Unary(timeout, [&](Endpoint& e, grpc::ClientContext* ctx) {
    return e.kv->Range(ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return std::vector<mvccpb::KeyValue>(resp.kvs().begin(), resp.kvs().end());
}

std::unique_ptr<grpc::ClientReader<v3electionpb::LeaderResponse>>
EtcdClient::Observe(const std::string& name, grpc::ClientContext* context) {
  // Without a token the stream fails at once and the observer retries.
  Authorize(context, absl::Seconds(5)).IgnoreError();
  v3electionpb::LeaderRequest req;
  req.set_name(name);
  return Current().election->Observe(context, req);
}

}  // namespace metasrv::server
