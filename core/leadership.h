// Who leads the metasrv cluster, as seen by this replica.
#ifndef METASRV_CORE_LEADERSHIP_H_
#define METASRV_CORE_LEADERSHIP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/metasrv_node_info.h"

namespace metasrv::core {

// Leadership as this replica sees it. Only the leader accepts reports and
// serves flow state; followers redirect clients to LeaderAddr().
//
// Thread safety: implementations are safe to call from any thread.
class Leadership {
 public:
  // This replica's current leadership.
  struct Term {
    bool leading = false;  // Whether it leads now.
    // The flow-state term (FlowStateManager::term()) its leadership began
    // in. A write decided under this leadership must be refused once the
    // state moved on (the replica stepped down and reset it). nullopt: no
    // such pinning (standalone).
    std::optional<uint64_t> state_term;
  };

  virtual ~Leadership() = default;

  // Whether this replica leads now.
  virtual bool IsLeader() const { return CurrentTerm().leading; }

  // Whether it leads, and since which flow-state term.
  virtual Term CurrentTerm() const = 0;

  // The leader's advertised address, or empty when no leader is known.
  virtual std::string LeaderAddr() const = 0;

  // Advertised addresses of the replicas that do not lead, as far as known.
  virtual std::vector<std::string> FollowerAddrs() const = 0;

  // Every replica taking part (ours included), with what it registered
  // about itself, as last read from the store; never a store call. Default:
  // the followers by address, with no info.
  virtual std::vector<MetasrvNodeInfo> Peers() const;
};

// What an election tells the rest of the replica about its transitions.
// Called on the election's threads, one transition at a time.
class LeadershipListener {
 public:
  virtual ~LeadershipListener() = default;
  // Before this replica starts leading: start from an empty state. Returns
  // the flow-state term the leadership begins in.
  virtual uint64_t OnBecomeLeader() = 0;
  // Right after it stopped leading: end its streams and drop its state.
  // Returns the number of KV keys dropped.
  virtual uint64_t OnStepDown() = 0;
};

// A single metasrv with no election: always the leader.
class StandaloneLeadership final : public Leadership {
 public:
  explicit StandaloneLeadership(std::string self_addr)
      : self_addr_(std::move(self_addr)) {}
  Term CurrentTerm() const override { return {true, std::nullopt}; }
  std::string LeaderAddr() const override { return self_addr_; }
  std::vector<std::string> FollowerAddrs() const override { return {}; }

 private:
  const std::string self_addr_;  // This replica's advertised address.
};

// The error code in a greptime.v1.meta response header that tells a client
// this replica does not lead (GreptimeDB's "not leader").
inline constexpr int32_t kNotLeaderErrorCode = 2;

// The text of GreptimeDB's not-leader error in a response header, as
// upstream's followers write it (greptime-proto's src/v1/meta.rs,
// ResponseHeader's not-leader error): it names no leader; clients ask a
// replica who leads.
inline constexpr char kNotLeaderText[] = "Current server is not leader";

// Why a follower cannot serve a call of our own API (its
// FAILED_PRECONDITION): names the leader, or says that none is elected.
std::string NotLeaderMessage(const Leadership& leadership);

}  // namespace metasrv::core

#endif  // METASRV_CORE_LEADERSHIP_H_
