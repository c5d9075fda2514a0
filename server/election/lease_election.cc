#include "server/election/lease_election.h"

#include <algorithm>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/election/backoff.h"
#include "server/election/candidate_info.h"
#include "spdlog/spdlog.h"
#include "server/ops/threads.h"

namespace metasrv::server {
namespace {

// A holder id unique to this process: the address and 64 random bits.
std::string NewHolder(const std::string& addr) {
  absl::BitGen gen;
  return absl::StrFormat("%s#%016x", addr, absl::Uniform<uint64_t>(gen));
}

}  // namespace

LeaseElection::LeaseElection(LeaseElectionOptions options,
                             std::unique_ptr<LeaseStore> store,
                             const core::Clock* clock,
                             core::LeadershipListener* listener)
    : options_(std::move(options)),
      leader_key_(options_.name + "/leader"),
      holder_(NewHolder(options_.self_addr)),
      clock_(clock),
      store_(std::move(store)),
      state_(options_.self_addr, options_.store_name, clock, options_.lease_ttl,
             listener) {}

LeaseElection::~LeaseElection() { Stop(); }

absl::Status LeaseElection::CheckAccess(absl::Duration timeout) {
  return store_->Open(timeout);
}

void LeaseElection::Start() {
  spdlog::info("campaigning for leadership of '{}' on {} as {}", options_.name,
               options_.store_name, options_.self_addr);
  session_thread_ =
      StartThread(ThreadRole::kLeaseSession, [this] { SessionLoop(); });
}

void LeaseElection::SetPassword(std::string password) {
  absl::MutexLock lock(&mu_);
  new_password_ = std::move(password);
}

void LeaseElection::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (session_thread_.joinable()) session_thread_.join();
}

core::Leadership::Term LeaseElection::CurrentTerm() const {
  return state_.CurrentTerm();
}

std::string LeaseElection::LeaderAddr() const {
  const LeaderState::Named leader = state_.Leader();
  if (leader.stale || leader.addr.empty()) {
    // The row we read has expired (its leader may be dead and another may
    // lead already), or our last read found no leader row: that answer is
    // not taken as fresh. Not named; the session asks the store now, not at
    // its next round (at most every eighth of a round, however many readers
    // ask), as upstream's leader() reads the store on every call.
    absl::MutexLock lock(&mu_);
    if (clock_->Monotonic() - last_round_ >=
        state_.lease().keepalive_interval() / 8) {
      refresh_requested_ = true;
    }
  }
  return leader.addr;
}

std::vector<std::string> LeaseElection::FollowerAddrs() const {
  return state_.FollowerAddrs();
}

std::vector<core::MetasrvNodeInfo> LeaseElection::Peers() const {
  return state_.Peers();
}

bool LeaseElection::Wait(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto interrupted = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || resign_requested_ || refresh_requested_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&interrupted),
                       deadline - clock_->Monotonic());
  return !stopping_;
}

void LeaseElection::SessionLoop() {
  Backoff backoff;
  const absl::Duration interval = state_.lease().keepalive_interval();
  absl::Time next = clock_->Monotonic();
  while (Wait(next)) {
    bool release = false;
    {
      absl::MutexLock lock(&mu_);
      std::swap(release, resign_requested_);
    }
    if (state_.leading() && !state_.lease().Valid()) {
      state_.StepDown("the lease could not be renewed in time");
      state_.lease().Lost();
    }
    if (release) {
      store_->Release(leader_key_, holder_, interval).IgnoreError();
      state_.lease().Lost();
    }
    const absl::Time sent = clock_->Monotonic();
    const absl::Status round = Round(sent);
    state_.ReportHealth(round);
    if (round.ok()) {
      backoff.Reset();
      next = sent + interval;
    } else {
      next = clock_->Monotonic() + backoff.Next();
    }
    // A leader wakes at its deadline at the latest, to step down on time.
    if (CurrentTerm().leading)
      next = std::min(next, state_.lease().valid_until());
  }
  Leave();
}

absl::Status LeaseElection::Round(absl::Time sent) {
  const absl::Duration interval = state_.lease().keepalive_interval();
  const bool leading = state_.leading();
  bool yielding = false;
  {
    absl::MutexLock lock(&mu_);
    yielding = sent < yield_until_;
    last_round_ = sent;
    refresh_requested_ = false;
    if (new_password_.has_value()) {
      store_->SetPassword(*std::move(new_password_));
      new_password_.reset();
    }
  }
  // While yielding (after a resignation) the row is left alone, even if
  // the step-down is still in progress.
  if (!yielding) {
    absl::StatusOr<bool> held = store_->Acquire(
        leader_key_, holder_, options_.self_addr, options_.lease_ttl, interval);
    if (!held.ok()) return held.status();
    if (*held) {
      state_.lease().Confirmed(sent);
      if (!leading) BecomeLeader();
    } else {
      if (leading) state_.StepDown("another replica holds the lease");
      state_.lease().Lost();
    }
  }
  absl::Status put =
      store_->Put(absl::StrCat(options_.name, "/candidate/", holder_), holder_,
                  CandidateValue(options_.describe, options_.self_addr),
                  options_.lease_ttl, interval);
  if (!put.ok()) return put;
  absl::StatusOr<std::vector<LeaseStore::Entry>> rows =
      store_->Scan(options_.name + "/", interval);
  if (!rows.ok()) return rows.status();
  std::string leader;
  absl::Time leader_until = absl::InfinitePast();
  std::vector<core::MetasrvNodeInfo> candidates;
  const std::string candidate_prefix = options_.name + "/candidate/";
  for (const LeaseStore::Entry& row : *rows) {
    if (row.key == leader_key_) {
      leader = row.value;
      // Measured from before the round: never later than the row's expiry.
      leader_until = sent + row.remaining;
    }
    if (absl::StartsWith(row.key, candidate_prefix)) {
      absl::StatusOr<core::MetasrvNodeInfo> info =
          core::DecodeMetasrvNodeInfo(row.value);
      if (info.ok()) candidates.push_back(*std::move(info));
    }
  }
  state_.SetObserved(leader, leader_until);
  state_.SetPeers(std::move(candidates));
  return absl::OkStatus();
}

void LeaseElection::Leave() {
  state_.StepDown("stopping");
  // Hand over now rather than at expiry; skipped when the store is down
  // (each try would wait out its timeout).
  if (state_.healthy()) {
    const absl::Duration interval = state_.lease().keepalive_interval();
    store_->Release(leader_key_, holder_, interval).IgnoreError();
    store_
        ->Release(absl::StrCat(options_.name, "/candidate/", holder_), holder_,
                  interval)
        .IgnoreError();
  }
  state_.lease().Lost();
  store_->Close();
}

void LeaseElection::BecomeLeader() {
  const bool led = state_.BecomeLeader([this] {
    absl::MutexLock lock(&mu_);
    return !stopping_ && !resign_requested_ &&
           clock_->Monotonic() >= yield_until_;
  });
  if (led) {
    spdlog::info("became leader of '{}' on {}", options_.name,
                 options_.store_name);
  }
}

absl::StatusOr<uint64_t> LeaseElection::Resign() {
  if (!state_.leading()) {
    return absl::FailedPreconditionError("not leader; nothing to resign");
  }
  {
    absl::MutexLock lock(&mu_);
    // Two rounds out of the running: the others poll every TTL/3.
    yield_until_ =
        clock_->Monotonic() + 2 * state_.lease().keepalive_interval();
  }
  // Step down first: the row is released only once nothing here acts.
  const uint64_t dropped = state_.StepDown("leader change requested");
  absl::MutexLock lock(&mu_);
  resign_requested_ = true;
  return dropped;
}

}  // namespace metasrv::server
