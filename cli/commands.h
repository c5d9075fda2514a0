// metasrvctl's commands, each one RPC (or one stream) against a metasrv.
#ifndef METASRV_CLI_COMMANDS_H_
#define METASRV_CLI_COMMANDS_H_

#include <google/protobuf/struct.pb.h>
#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "metasrv/v1/metasrv.grpc.pb.h"

namespace metasrvctl {

// Exit codes.
inline constexpr int kOk = 0, kError = 1, kUsage = 2;

// A command line, split.
struct Flags {
  std::map<std::string, std::string> values;  // --name=value (or "true").
  std::vector<std::string> positional;        // Everything else.
};

// Where to send calls, and their deadline.
class Client {
 public:
  Client(std::shared_ptr<grpc::Channel> channel, absl::Duration timeout,
         std::vector<std::string> replicas = {},
         std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr)
      : channel_(std::move(channel)),
        timeout_(timeout),
        replicas_(std::move(replicas)),
        credentials_(std::move(credentials)) {}

  // Sets the deadline of a unary call.
  void Prepare(grpc::ClientContext* ctx) const;
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  absl::Duration timeout() const { return timeout_; }
  // Every address --addr names, in its order.
  const std::vector<std::string>& replicas() const { return replicas_; }
  // A channel of its own to `addr`, with the same credentials.
  std::shared_ptr<grpc::Channel> ChannelTo(const std::string& addr) const;
  // The same client, its channel to the leader now (FindLeader among
  // replicas()): for commands that run on across a leader change.
  Client Following() const;

 private:
  std::shared_ptr<grpc::Channel> channel_;  // To the metasrv.
  absl::Duration timeout_;                  // Per unary call.
  std::vector<std::string> replicas_;       // --addr's addresses.
  std::shared_ptr<grpc::ChannelCredentials> credentials_;  // Plain or TLS.
};

// The leader among `replicas`: a replica that says it leads, as `replicas`
// names it (loopback stays loopback, a published port stays published);
// else the advertised address the first that names a leader names; else
// the first replica, so that the command's own error is what is said. All
// are asked at once: silent replicas cost one `timeout` together.
std::string FindLeader(const std::vector<std::string>& replicas,
                       const std::shared_ptr<grpc::ChannelCredentials>& creds,
                       absl::Duration timeout);

// For commands that run until stopped (watch, top --watch): a call that
// failed because leadership moved (the leader died or stepped down, or the
// replica asked does not lead) is made again to the leader, found anew,
// for up to kFollowFor without one.
class Follow {
 public:
  static constexpr absl::Duration kFollowFor = absl::Seconds(60);
  explicit Follow(const char* command) : command_(command) {}
  // Whether to go on after `s`: leadership moved (said on stderr, once per
  // loss) and not for longer than kFollowFor. Waits a moment first.
  bool Lost(const grpc::Status& s);
  // A call succeeded: the leader is found.
  void Found() { lost_since_ = absl::InfiniteFuture(); }

 private:
  const char* const command_;                        // For what it says.
  absl::Time lost_since_ = absl::InfiniteFuture();  // Since the loss.
};

// The leader's address as the metasrv on `channel` answers AskLeader (asked
// as a frontend, within `timeout`); empty when it names none or the call
// fails (then `*status`, when given, says why).
std::string AskLeaderOf(const std::shared_ptr<grpc::Channel>& channel,
                        absl::Duration timeout, grpc::Status* status = nullptr);

// What the replica on `channel` says of itself (Replica.Describe). In
// status.cc.
grpc::Status Describe(const Client& c,
                      const std::shared_ptr<grpc::Channel>& channel,
                      metasrv::v1::DescribeReplicaResponse* out);

// Whether boolean flag `name` is set and not "false" (`--json`,
// `--json=true`; `--json=false` is off).
bool FlagOn(const Flags& f, const std::string& name);

// Says on stderr what failed (and what usually causes it: for a refused
// admin call, a missing token, or with `token_given` a wrong one); returns
// kError.
int Fail(const grpc::Status& s, bool token_given = false);
// "resource exhausted", ...: a gRPC code as Fail() names it.
const char* StatusCodeName(grpc::StatusCode code);

// --flow=ID,... and --node=ID,... into `ids`; false (after saying why) if
// malformed.
bool ParseFlowIds(const Flags& f, const char* command,
                  std::vector<uint32_t>* ids);
bool ParseNodeIds(const Flags& f, const char* command,
                  std::vector<uint64_t>* ids);

// Prints `value` as JSON (protobuf's printer: escaping done right, numbers
// exact up to 2^53) and a newline. kOk, or kError if it cannot.
int PrintJson(const google::protobuf::Value& value);

// The contents of `path`; *ok says whether it could be read.
std::string ReadFile(const std::string& path, bool* ok);

// Each prints its result on stdout (errors on stderr) and returns an exit
// code. See Commands() in metasrvctl.cc for what each does.
int Get(const Client& c, const Flags& f);
int Nodes(const Client& c, const Flags& f);
int Leader(const Client& c, const Flags& f);
int Peers(const Client& c, const Flags& f);
int Reset(const Client& c, const Flags& f);   // In admin_commands.cc.
int Forget(const Client& c, const Flags& f);  // In admin_commands.cc.
int Watch(const Client& c, const Flags& f);
// With several --addr replicas, the per-replica view of Status().
int Health(const Client& c, const Flags& f);
int Status(const Client& c, const Flags& f);  // In status.cc.
int Top(const Client& c, const Flags& f);     // In top.cc.

}  // namespace metasrvctl

#endif  // METASRV_CLI_COMMANDS_H_
