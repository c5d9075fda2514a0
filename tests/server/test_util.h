// Helpers for tests that talk to a metasrv over gRPC.
#ifndef METASRV_TESTS_SERVER_TEST_UTIL_H_
#define METASRV_TESTS_SERVER_TEST_UTIL_H_

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/time/time.h"
#include "greptime/v1/meta/cluster.grpc.pb.h"
#include "greptime/v1/meta/heartbeat.grpc.pb.h"
#include "metasrv/v1/metasrv.grpc.pb.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace metasrv::testing {

namespace meta = greptime::v1::meta;

// Polls `done` until it returns true or `timeout` passes; returns its last
// answer.
bool WaitFor(const std::function<bool()>& done,
             absl::Duration timeout = absl::Seconds(10));

// A free loopback port.
int FreePort();

// A socket listening on a free loopback port that never accepts: a port
// someone holds, a peer that stays silent. Its fd (the caller closes it),
// and the port in `*port`; -1 (a test failure) if none could be had.
int ListenSilently(int* port);

// A heartbeat request with a header of `role` and `member_id`.
meta::HeartbeatRequest Request(meta::Role role, uint64_t member_id);

// A flownode's report: flows as (id, state size, last exec time).
meta::HeartbeatRequest FlowReport(
    uint64_t member_id,
    const std::vector<std::tuple<uint32_t, uint64_t, int64_t>>& flows);

// One open Heartbeat stream, used synchronously.
class HeartbeatClient {
 public:
  explicit HeartbeatClient(const std::shared_ptr<grpc::Channel>& channel);
  ~HeartbeatClient();

  // Sends `request` and reads its response; nullopt if the stream ended.
  std::optional<meta::HeartbeatResponse> Call(
      const meta::HeartbeatRequest& request);
  // Closes the sending side and returns the final status.
  grpc::Status Close();
  // Cancels the call, as if the client vanished.
  void Cancel() { context_.TryCancel(); }

 private:
  std::unique_ptr<meta::Heartbeat::Stub> stub_;  // Owns the stub.
  grpc::ClientContext context_;                  // The call's context.
  std::unique_ptr<grpc::ClientReaderWriter<meta::HeartbeatRequest,
                                           meta::HeartbeatResponse>>
      stream_;           // The call.
  bool closed_ = false;  // Close() ran.
};

// One flow of a GetFlowState answer (a row of its columns).
struct FlowRow {
  uint32_t flow_id = 0;
  uint32_t fields = 0;  // metasrv::v1::FlowField bits.
  uint64_t state_size = 0;
  int64_t last_exec_time_ms = 0;
  int64_t start_time_ms = 0;
  bool has(metasrv::v1::FlowField f) const { return (fields & f) != 0; }
};
struct FlowStateRows {
  bool found = false;
  std::vector<FlowRow> flows;
};

// Calls GetFlowState and turns its columns into rows; fails the test on an
// RPC error or columns of different lengths.
FlowStateRows GetFlowState(const std::shared_ptr<grpc::Channel>& channel,
                           const std::vector<uint32_t>& flow_ids = {});

// The value of one key through Cluster.Range, or nullopt if absent.
std::optional<std::string> RangeGet(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& key);

// The leader's address as AskLeader (asked as a flownode) answers it; empty
// when the call fails or within a second.
std::string AskLeader(const std::shared_ptr<grpc::Channel>& channel);

// Whether the standard health service answers SERVING.
bool IsServing(const std::shared_ptr<grpc::Channel>& channel);

std::shared_ptr<grpc::Channel> Connect(const std::string& addr);
// A channel with its own TCP connection (gRPC shares one between channels to
// the same address otherwise), with `args` on top.
std::shared_ptr<grpc::Channel> ConnectOwn(
    const std::string& addr,
    grpc::ChannelArguments args = grpc::ChannelArguments());

// Whether a TCP connection to the IPv4 "host:port" `addr` succeeds now.
bool AcceptsTcp(const std::string& addr);
// A connected TCP socket to the IPv4 "host:port" `addr`, or -1.
int ConnectTcp(const std::string& addr);

// GET `path` from 127.0.0.1:`port` over HTTP/1.0; status 0 if it failed
// (or no answer came within 10 s).
struct HttpResult {
  int status = 0;    // The HTTP status code.
  std::string body;  // The body.
};
HttpResult HttpGet(int port, const std::string& path);

// GET /metrics from 127.0.0.1:`port` (expects 200): each sample line's
// name and labels (`name{label="v"}`) -> its value.
std::map<std::string, double> ScrapeMetrics(int port);

// The flow ids of a WatchFlowState message's state, in its order.
std::vector<uint32_t> FlowIds(const metasrv::v1::WatchFlowStateResponse& m);

// A child process, killed when this object dies.

class ChildProcess {
 public:
  // Starts `argv[0]` with `argv`. Its stdout is readable through ReadLine()
  // and its stderr goes to ours.
  explicit ChildProcess(const std::vector<std::string>& argv);
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // Reads one line of its stdout, waiting up to `timeout`.
  std::optional<std::string> ReadLine(
      absl::Duration timeout = absl::Seconds(10));
  // Sends `signal`.
  void Signal(int signal);
  // Waits up to `timeout` for it to exit; its wait status, or nullopt.
  std::optional<int> Wait(absl::Duration timeout);

 private:
  pid_t pid_ = -1;        // The child; -1 once reaped.
  int stdout_fd_ = -1;    // Read end of its stdout.
  std::string buffered_;  // Read but not yet returned.
};

// The metasrv binary on a free loopback port, up and serving.
class ServerProcess {
 public:
  // Starts it with `extra_args` and waits until it serves: on a free
  // loopback port, or on the --bind_addr `extra_args` give.
  explicit ServerProcess(std::vector<std::string> extra_args = {});

  const std::string& addr() const { return addr_; }
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  ChildProcess& process() { return *process_; }

 private:
  std::string addr_;                        // Where it listens.
  std::unique_ptr<ChildProcess> process_;   // The process.
  std::shared_ptr<grpc::Channel> channel_;  // A channel to it.
};

// The default logger writes into a string while this lives.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>(
        "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)));
    spdlog::set_level(spdlog::level::info);
  }
  ~CapturedLog() { Restore(); }
  // Puts the previous logger back; returns what was written.
  std::string Restore() {
    if (previous_ != nullptr) spdlog::set_default_logger(previous_);
    previous_ = nullptr;
    return out_.str();
  }

 private:
  std::ostringstream out_;                    // What was logged.
  std::shared_ptr<spdlog::logger> previous_;  // To restore; null once done.
};

}  // namespace metasrv::testing

#endif  // METASRV_TESTS_SERVER_TEST_UTIL_H_
