#include "server/election/etcd_election.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/election/backoff.h"
#include "server/election/candidate_info.h"
#include "spdlog/spdlog.h"
#include "server/ops/threads.h"

namespace metasrv::server {

EtcdElection::EtcdElection(EtcdElectionOptions options,
                           const core::Clock* clock,
                           core::LeadershipListener* listener)
    : options_(std::move(options)),
      peers_prefix_(options_.name + std::string("\0peers/", 7)),
      clock_(clock),
      // A ping unanswered for a third of the TTL ends the connection.
      client_(options_.endpoints, options_.security,
              std::max(absl::Seconds(1), options_.lease_ttl / 3)),
      state_(options_.self_addr, "etcd", clock, options_.lease_ttl, listener) {}

EtcdElection::~EtcdElection() { Stop(); }

namespace {

// Whether `text` is what etcd's elections name a candidate's key after its
// prefix: the lease id in lowercase hex.
bool IsLeaseId(absl::string_view text) {
  return !text.empty() &&
         text.find_first_not_of("0123456789abcdef") == absl::string_view::npos;
}

}  // namespace

absl::Status EtcdElection::CheckAccess(absl::Duration timeout) {
  absl::Status access = client_.CheckAccess(timeout);
  if (!access.ok()) return access;
  const std::string& name = options_.name;
  // Another election beneath ours: keys "<name>/x/..." (ours are
  // "<name>/<lease>").
  absl::StatusOr<std::vector<mvccpb::KeyValue>> below =
      client_.RangePrefix(name + "/", timeout);
  if (!below.ok()) return below.status();
  for (const mvccpb::KeyValue& kv : *below) {
    const std::string& key = kv.key();
    const size_t last = key.rfind('/');
    if (last > name.size() &&
        IsLeaseId(absl::string_view(key).substr(last + 1))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "election '", name, "' covers another election's key '", key,
          "' on this etcd: choose names where neither, with '/', is a "
          "prefix of the other"));
    }
  }
  // Ours beneath another election's: a campaign key "<parent>/<lease>" for
  // a parent of our name.
  for (size_t slash = name.find('/'); slash != std::string::npos;
       slash = name.find('/', slash + 1)) {
    const std::string parent = name.substr(0, slash);
    absl::StatusOr<std::vector<mvccpb::KeyValue>> keys =
        client_.RangePrefix(parent + "/", timeout);
    if (!keys.ok()) return keys.status();
    for (const mvccpb::KeyValue& kv : *keys) {
      const std::string& key = kv.key();
      if (IsLeaseId(absl::string_view(key).substr(parent.size() + 1))) {
        return absl::InvalidArgumentError(absl::StrCat(
            "election '", name, "' lies under election '", parent,
            "' of another cluster on this etcd (its key '", key,
            "'): choose names where neither, with '/', is a prefix of the "
            "other"));
      }
    }
  }
  return absl::OkStatus();
}

void EtcdElection::Start() {
  spdlog::info("campaigning for leadership of '{}' through etcd {} as {}",
               options_.name, absl::StrJoin(options_.endpoints, ","),
               options_.self_addr);
  session_thread_ =
      StartThread(ThreadRole::kEtcdSession, [this] { SessionLoop(); });
  observe_thread_ =
      StartThread(ThreadRole::kEtcdObserve, [this] { ObserveLoop(); });
  peers_thread_ = StartThread(ThreadRole::kEtcdPeers, [this] { PeersLoop(); });
}

void EtcdElection::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    if (campaign_ctx_ != nullptr) campaign_ctx_->TryCancel();
    if (observe_ctx_ != nullptr) observe_ctx_->TryCancel();
  }
  if (session_thread_.joinable()) session_thread_.join();
  {
    // The observer may have opened a new stream after the first cancel.
    absl::MutexLock lock(&mu_);
    if (observe_ctx_ != nullptr) observe_ctx_->TryCancel();
  }
  if (observe_thread_.joinable()) observe_thread_.join();
  if (peers_thread_.joinable()) peers_thread_.join();
}

core::Leadership::Term EtcdElection::CurrentTerm() const {
  return state_.CurrentTerm();
}

std::string EtcdElection::LeaderAddr() const { return state_.Leader().addr; }

std::vector<std::string> EtcdElection::FollowerAddrs() const {
  return state_.FollowerAddrs();
}

std::vector<core::MetasrvNodeInfo> EtcdElection::Peers() const {
  return state_.Peers();
}

void EtcdElection::PeersLoop() {
  // Apart from the keep-alives, so a slow etcd delays the list, never a
  // keep-alive.
  const absl::Duration interval = state_.lease().keepalive_interval();
  int64_t registered = 0;
  absl::Time next = clock_->Monotonic();
  while (Wait(next, false)) {
    int64_t lease = 0;
    {
      absl::MutexLock lock(&mu_);
      lease = session_lease_;
    }
    // A new session registers at once; then every keep-alive interval.
    next =
        clock_->Monotonic() +
        (lease != 0 && lease == registered ? interval : absl::Milliseconds(50));
    if (lease == 0) continue;
    if (RegisterAndListPeers(lease)) registered = lease;
  }
}

bool EtcdElection::RegisterAndListPeers(int64_t lease) {
  const absl::Duration timeout = state_.lease().keepalive_interval();
  absl::Status put = client_.Put(
      peers_prefix_ + options_.self_addr,
      CandidateValue(options_.describe, options_.self_addr), lease, timeout);
  if (!put.ok()) return false;  // The keep-alive reports etcd's health.
  absl::StatusOr<std::vector<mvccpb::KeyValue>> keys =
      client_.RangePrefix(peers_prefix_, timeout);
  if (!keys.ok()) return false;
  std::vector<core::MetasrvNodeInfo> peers;
  for (const mvccpb::KeyValue& kv : *keys) {
    absl::StatusOr<core::MetasrvNodeInfo> peer =
        core::DecodeMetasrvNodeInfo(kv.value());
    if (peer.ok()) peers.push_back(*std::move(peer));
  }
  state_.SetPeers(std::move(peers));
  return true;
}

bool EtcdElection::Wait(absl::Time deadline, bool session) {
  absl::MutexLock lock(&mu_);
  auto interrupted = [this, session]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || (session && (session_over_ || resign_requested_));
  };
  // `deadline` is monotonic; absl waits take a duration, which it measures
  // on a clock that does not jump.
  mu_.AwaitWithTimeout(absl::Condition(&interrupted),
                       deadline - clock_->Monotonic());
  return !interrupted();
}

void EtcdElection::SessionLoop() {
  Backoff backoff;
  const absl::Duration interval = state_.lease().keepalive_interval();
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) break;
    }
    const absl::Time sent = clock_->Monotonic();
    absl::StatusOr<int64_t> lease =
        client_.LeaseGrant(options_.lease_ttl, interval);
    state_.ReportHealth(lease.status());
    if (!lease.ok()) {
      Wait(clock_->Monotonic() + backoff.Next(), false);
      continue;
    }
    backoff.Reset();
    state_.lease().Confirmed(sent);
    {
      absl::MutexLock lock(&mu_);
      session_lease_ = *lease;
      session_over_ = false;
      resign_requested_ = false;
    }
    std::thread campaign = StartThread(
        ThreadRole::kEtcdCampaign, [this, id = *lease] { CampaignLoop(id); });
    const absl::Status ended = KeepAliveLoop(*lease);
    {
      absl::MutexLock lock(&mu_);
      session_over_ = true;
      if (campaign_ctx_ != nullptr) campaign_ctx_->TryCancel();
    }
    StepDown(ended.ok() ? "session ended" : "lease keep-alive failed");
    state_.lease().Lost();
    campaign.join();
    // Revoking deletes our election key, so the next candidate leads now
    // rather than when the lease expires. Best effort: etcd may be down.
    client_.LeaseRevoke(*lease, interval).IgnoreError();
    {
      absl::MutexLock lock(&mu_);
      session_lease_ = 0;
    }
    if (!ended.ok()) {
      state_.ReportHealth(ended);
      Wait(clock_->Monotonic() + backoff.Next(), false);
    }
  }
}

absl::Status EtcdElection::KeepAliveLoop(int64_t lease) {
  const absl::Duration interval = state_.lease().keepalive_interval();
  // Between tries of a keep-alive that failed.
  const absl::Duration pause = std::min(absl::Milliseconds(100), interval);
  // Keep-alives every TTL/6 (each may take TTL/3): when etcd stops
  // answering, the last one acknowledged is at most TTL/6 old, so at least
  // 0.95 - 1/6 of the TTL is left to ride the outage out.
  const absl::Duration every = interval / 2;
  absl::Time next = clock_->Monotonic() + every;
  while (Wait(next, true)) {
    const absl::Time sent = clock_->Monotonic();
    // Each try ends in time for another before the lease could be gone.
    const absl::Duration left = state_.lease().held_until() - sent;
    absl::StatusOr<absl::Duration> renewed = client_.LeaseKeepAlive(
        lease, std::clamp(left / 2, absl::Milliseconds(100), interval));
    if (renewed.ok()) {
      state_.lease().Confirmed(sent);
      state_.ReportHealth(absl::OkStatus());
      next = sent + every;
      continue;
    }
    // A lease etcd no longer has is gone. Anything else (etcd slow, between
    // raft leaders, a link down) is tried again every 100 ms until
    // the lease could have expired (LeaderLease::held_until: TTL after the
    // last keep-alive etcd acknowledged, less a margin for clock rates).
    // The leader acts only while the lease is valid (2/3 TTL; CurrentTerm
    // checks it); a keep-alive that gets through before held_until finds
    // the lease, and so its leadership, unbroken: no step-down, no reset.
    if (absl::IsNotFound(renewed.status()) ||
        clock_->Monotonic() + pause >= state_.lease().held_until()) {
      return renewed.status();
    }
    state_.ReportHealth(renewed.status());
    next = clock_->Monotonic() + pause;
  }
  return absl::OkStatus();
}

void EtcdElection::CampaignLoop(int64_t lease) {
  Backoff backoff;
  while (true) {
    grpc::ClientContext ctx;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_ || session_over_) return;
      campaign_ctx_ = &ctx;
    }
    absl::StatusOr<v3electionpb::LeaderKey> key =
        client_.Campaign(options_.name, lease, options_.self_addr, &ctx);
    {
      absl::MutexLock lock(&mu_);
      campaign_ctx_ = nullptr;
    }
    if (key.ok()) {
      // A campaign that returns says that our key was first when etcd
      // answered, not that our lease outlived the wait (it may have
      // expired while etcd was unavailable, deleting the key, before this
      // session's keep-alive saw it). A keep-alive sent after the win must
      // find the lease first: only a live session leads.
      ConfirmAndLead(lease, *key);
      return;
    }
    state_.ReportHealth(key.status());
    if (!Wait(clock_->Monotonic() + backoff.Next(), true)) return;
  }
}

void EtcdElection::ConfirmAndLead(int64_t lease,
                                  const v3electionpb::LeaderKey& key) {
  const absl::Duration interval = state_.lease().keepalive_interval();
  Backoff backoff;
  while (true) {
    const absl::Time sent = clock_->Monotonic();
    absl::StatusOr<absl::Duration> renewed =
        client_.LeaseKeepAlive(lease, interval);
    if (renewed.ok()) {
      state_.lease().Confirmed(sent);
      BecomeLeader(lease, key);
      return;
    }
    if (absl::IsNotFound(renewed.status())) {
      spdlog::warn("won the campaign of '{}' on lease {:x}, which etcd no "
                   "longer has: not leading on it",
                   options_.name, lease);
      return;  // The keep-alive loop ends the session.
    }
    if (!Wait(clock_->Monotonic() + backoff.Next(), true)) return;
  }
}

void EtcdElection::BecomeLeader(int64_t lease,
                                const v3electionpb::LeaderKey& key) {
  const bool led = state_.BecomeLeader([&] {
    absl::MutexLock lock(&mu_);
    if (stopping_ || session_over_ || session_lease_ != lease) return false;
    leader_key_ = key;  // Before leading: Resign() finds it.
    return true;
  });
  if (led) {
    spdlog::info("became leader of '{}' (lease {:x})", options_.name, lease);
  }
}

uint64_t EtcdElection::StepDown(const char* why) {
  const uint64_t dropped = state_.StepDown(why);
  absl::MutexLock lock(&mu_);
  leader_key_.reset();
  return dropped;
}

absl::StatusOr<uint64_t> EtcdElection::Resign() {
  std::optional<v3electionpb::LeaderKey> key;
  if (state_.leading()) {
    absl::MutexLock lock(&mu_);
    key = leader_key_;
  }
  if (!key.has_value()) {
    return absl::FailedPreconditionError("not leader; nothing to resign");
  }
  if (absl::Status next = CheckNextInLine(*key); !next.ok()) return next;
  const uint64_t dropped = StepDown("leader change requested");
  // Deleting our key lets the next candidate lead at once.
  absl::Status resigned =
      client_.Resign(*key, state_.lease().keepalive_interval());
  if (!resigned.ok()) {
    spdlog::warn("etcd resign failed ({}); the lease will be revoked instead",
                 resigned.ToString());
  }
  {
    absl::MutexLock lock(&mu_);
    resign_requested_ = true;  // End the session; a new one campaigns again.
  }
  return dropped;
}

absl::Status EtcdElection::CheckNextInLine(
    const v3electionpb::LeaderKey& ours) {
  const absl::Duration timeout = state_.lease().keepalive_interval();
  absl::StatusOr<std::vector<mvccpb::KeyValue>> keys =
      client_.RangePrefix(options_.name + "/", timeout);
  if (!keys.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "not handing over: etcd cannot say who is next in line: ",
        keys.status().message()));
  }
  // etcd's election goes to the oldest key.
  std::sort(keys->begin(), keys->end(),
            [](const mvccpb::KeyValue& a, const mvccpb::KeyValue& b) {
              return a.create_revision() < b.create_revision();
            });
  for (const mvccpb::KeyValue& kv : *keys) {
    if (kv.key() == ours.key() || kv.lease() == 0) continue;
    absl::StatusOr<EtcdClient::LeaseTtl> ttl =
        client_.LeaseTimeToLive(kv.lease(), timeout);
    if (absl::IsNotFound(ttl.status())) continue;  // Its key goes with it.
    if (!ttl.ok()) {
      return absl::UnavailableError(absl::StrCat(
          "not handing over: etcd cannot say how the next in line is: ",
          ttl.status().message()));
    }
    // A live candidate renews every third of its TTL, so it has over two
    // thirds left; etcd rounds down, so left + 1 s bounds what is left.
    if ((ttl->left + absl::Seconds(1)) * 2 <= ttl->granted) {
      return absl::FailedPreconditionError(absl::StrCat(
          "not handing over: the next in line, ", kv.value(),
          ", has not renewed its lease for ",
          absl::FormatDuration(ttl->granted - ttl->left - absl::Seconds(1)),
          " or more (is it cut off from etcd?); try again once it renews, "
          "or stop it"));
    }
    return absl::OkStatus();
  }
  return absl::OkStatus();  // Alone: campaigns again and leads.
}

void EtcdElection::ObserveLoop() {
  Backoff backoff;
  while (true) {
    grpc::ClientContext ctx;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      observe_ctx_ = &ctx;
    }
    auto reader = client_.Observe(options_.name, &ctx);
    v3electionpb::LeaderResponse resp;
    while (reader->Read(&resp)) {
      backoff.Reset();
      if (!state_.leading()) state_.SetObserved(resp.kv().value());
    }
    // Through Check(): an expired token is dropped, so the next stream logs
    // in again.
    client_.Check(reader->Finish()).IgnoreError();
    {
      absl::MutexLock lock(&mu_);
      observe_ctx_ = nullptr;
    }
    // The leader last observed stays named while the store was heard from
    // within a lease TTL (LeaderState::Leader): a stream that broke (a
    // slow or cut link, etcd restarting) says nothing of who leads, and
    // /ready must not flip with it. The next stream's first message says.
    Wait(clock_->Monotonic() + backoff.Next(), false);
  }
}

}  // namespace metasrv::server
