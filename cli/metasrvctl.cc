// metasrvctl: the metasrv from ops scripts, without grpcurl.
//
//   metasrvctl [--addr=HOST:PORT] [TLS flags] COMMAND [command flags]
//
// Exit codes: 0 ok, 1 error (the call failed), 2 usage.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "greptime/v1/meta/cluster.grpc.pb.h"
#include "greptime/v1/meta/heartbeat.grpc.pb.h"
#include "metasrv/v1/metasrv.grpc.pb.h"

namespace {

namespace meta = greptime::v1::meta;

constexpr int kOk = 0, kError = 1, kUsage = 2;

const char kUsageText[] =
    "usage: metasrvctl [--addr=HOST:PORT] [--timeout=5s] [--tls_ca=PEM]\n"
    "                  [--tls_cert=PEM --tls_key=PEM] COMMAND [flags]\n"
    "\n"
    "commands:\n"
    "  get      print the aggregated flow state\n"
    "  leader   print the leader's address\n"
    "  peers    print the metasrv replicas\n"
    "  reset    leader change: drop all flow state (admin)\n"
    "  watch    print flow-state changes as they happen\n"
    "\n"
    "metasrvctl COMMAND --help describes a command. Exit codes: 0 ok, 1 error,\n"
    "2 usage.\n";

const std::map<std::string, std::string> kCommandHelp = {
    {"get",
     "usage: metasrvctl get [--json] [--flow=ID,...]\n"
     "Prints the aggregate: per flow its state size, last execution time and\n"
     "start time (max over all flownodes), as a table or with --json as JSON.\n"},
    {"leader", "usage: metasrvctl leader\nPrints the leader's address (AskLeader).\n"},
    {"peers",
     "usage: metasrvctl peers\nPrints the leader and the followers (MetasrvPeers).\n"},
    {"reset",
     "usage: metasrvctl reset [--token_file=FILE]\n"
     "Leader change: the in-memory KV is reset and all flow state dropped (with\n"
     "etcd, the leader resigns). Sends the admin token from FILE as\n"
     "'authorization: Bearer <token>'. Prints the number of keys dropped.\n"},
    {"watch",
     "usage: metasrvctl watch [--interval=1s] [--count=N]\n"
     "Polls the flow state and prints one line per change: new, changed and\n"
     "removed flows, and resets. Stops after N polls (default: never).\n"},
};

struct Flags {
  std::map<std::string, std::string> values;  // --name=value (or "true").
  std::vector<std::string> positional;        // Everything else.
};

// Splits argv into --flags and words. Returns false on a malformed flag.
bool Parse(int argc, char** argv, int from, Flags* out) {
  for (int i = from; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--")) {
      const size_t eq = arg.find('=');
      if (arg.empty() || eq == 0) return false;
      if (eq == absl::string_view::npos) {
        out->values[std::string(arg)] = "true";
      } else {
        out->values[std::string(arg.substr(0, eq))] = std::string(arg.substr(eq + 1));
      }
    } else {
      out->positional.emplace_back(arg);
    }
  }
  return true;
}

std::string ReadFile(const std::string& path, bool* ok) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  *ok = static_cast<bool>(in);
  return s.str();
}

int Fail(const grpc::Status& s) {
  static const char* const kNames[] = {
      "ok",        "cancelled",           "unknown",           "invalid argument",
      "deadline exceeded", "not found",   "already exists",    "permission denied",
      "resource exhausted", "failed precondition", "aborted",  "out of range",
      "unimplemented", "internal",        "unavailable",       "data loss",
      "unauthenticated"};
  const int code = static_cast<int>(s.error_code());
  std::fprintf(stderr, "metasrvctl: %s: %s\n",
               code >= 0 && code <= 16 ? kNames[code] : "error",
               s.error_message().c_str());
  return kError;
}

class Client {
 public:
  Client(std::shared_ptr<grpc::Channel> channel, absl::Duration timeout)
      : channel_(std::move(channel)), timeout_(timeout) {}

  void Prepare(grpc::ClientContext* ctx) const {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      absl::ToChronoMilliseconds(timeout_));
  }
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  absl::Duration timeout_;
};

struct Row {
  uint32_t fields;
  uint64_t state_size;
  int64_t last_exec;
  int64_t start;
  bool operator!=(const Row& o) const {
    return fields != o.fields || state_size != o.state_size ||
           last_exec != o.last_exec || start != o.start;
  }
};

grpc::Status FetchState(const Client& c, const std::vector<uint32_t>& ids,
                        bool* found, std::map<uint32_t, Row>* rows) {
  auto stub = metasrv::v1::FlowState::NewStub(c.channel());
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  metasrv::v1::GetFlowStateRequest req;
  for (uint32_t id : ids) req.add_flow_ids(id);
  metasrv::v1::GetFlowStateResponse resp;
  grpc::Status s = stub->GetFlowState(&ctx, req, &resp);
  if (!s.ok()) return s;
  *found = resp.found();
  rows->clear();
  for (int i = 0; i < resp.flow_ids_size(); ++i) {
    (*rows)[resp.flow_ids(i)] = {resp.fields(i), resp.state_sizes(i),
                                 resp.last_exec_times_ms(i), resp.start_times_ms(i)};
  }
  return grpc::Status::OK;
}

std::string Cell(const Row& r, uint32_t bit, int64_t v) {
  return (r.fields & bit) ? absl::StrCat(v) : "-";
}

int Get(const Client& c, const Flags& f) {
  std::vector<uint32_t> ids;
  if (auto it = f.values.find("flow"); it != f.values.end()) {
    for (absl::string_view s : absl::StrSplit(it->second, ',', absl::SkipEmpty())) {
      uint32_t id;
      if (!absl::SimpleAtoi(s, &id)) {
        std::fprintf(stderr, "metasrvctl get: bad flow id '%s'\n", std::string(s).c_str());
        return kUsage;
      }
      ids.push_back(id);
    }
  }
  bool found = false;
  std::map<uint32_t, Row> rows;
  grpc::Status s = FetchState(c, ids, &found, &rows);
  if (!s.ok()) return Fail(s);
  if (f.values.count("json")) {
    std::string out = absl::StrCat("{\"found\":", found ? "true" : "false", ",\"flows\":[");
    bool first = true;
    for (const auto& [id, r] : rows) {
      absl::StrAppend(&out, first ? "" : ",", "{\"flow_id\":", id);
      if (r.fields & 1) absl::StrAppend(&out, ",\"state_size\":", r.state_size);
      if (r.fields & 2) absl::StrAppend(&out, ",\"last_exec_time_ms\":", r.last_exec);
      if (r.fields & 4) absl::StrAppend(&out, ",\"start_time_ms\":", r.start);
      out += "}";
      first = false;
    }
    std::printf("%s]}\n", out.c_str());
    return kOk;
  }
  if (!found) {
    std::printf("no flow state (no report since the last leader change)\n");
    return kOk;
  }
  std::printf("%-12s %-14s %-20s %-20s\n", "FLOW_ID", "STATE_SIZE", "LAST_EXEC_TIME_MS",
              "START_TIME_MS");
  for (const auto& [id, r] : rows) {
    std::printf("%-12u %-14s %-20s %-20s\n", id,
                Cell(r, 1, static_cast<int64_t>(r.state_size)).c_str(),
                Cell(r, 2, r.last_exec).c_str(), Cell(r, 4, r.start).c_str());
  }
  return kOk;
}

int Leader(const Client& c) {
  auto stub = meta::Heartbeat::NewStub(c.channel());
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  meta::AskLeaderRequest req;
  req.mutable_header()->set_role(meta::FRONTEND);
  meta::AskLeaderResponse resp;
  grpc::Status s = stub->AskLeader(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  if (resp.leader().addr().empty()) {
    std::fprintf(stderr, "metasrvctl: no leader is known\n");
    return kError;
  }
  std::printf("%s\n", resp.leader().addr().c_str());
  return kOk;
}

int Peers(const Client& c) {
  auto stub = meta::Cluster::NewStub(c.channel());
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  meta::MetasrvPeersRequest req;
  req.mutable_header()->set_role(meta::FRONTEND);
  meta::MetasrvPeersResponse resp;
  grpc::Status s = stub->MetasrvPeers(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  if (resp.has_leader()) std::printf("leader    %s\n", resp.leader().peer().addr().c_str());
  for (const auto& f : resp.followers()) std::printf("follower  %s\n", f.peer().addr().c_str());
  return kOk;
}

int Reset(const Client& c, const Flags& f) {
  auto stub = metasrv::v1::Admin::NewStub(c.channel());
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  if (auto it = f.values.find("token_file"); it != f.values.end()) {
    bool ok = false;
    const std::string token(absl::StripAsciiWhitespace(ReadFile(it->second, &ok)));
    if (!ok || token.empty()) {
      std::fprintf(stderr, "metasrvctl reset: cannot read a token from %s\n",
                   it->second.c_str());
      return kUsage;
    }
    ctx.AddMetadata("authorization", "Bearer " + token);
  }
  metasrv::v1::LeaderChangeResponse resp;
  grpc::Status s = stub->LeaderChange(&ctx, {}, &resp);
  if (!s.ok()) return Fail(s);
  std::printf("leader change done; %llu keys dropped\n",
              static_cast<unsigned long long>(resp.dropped_keys()));
  return kOk;
}

int Watch(const Client& c, const Flags& f) {
  absl::Duration interval = absl::Seconds(1);
  int64_t count = -1;
  if (auto it = f.values.find("interval"); it != f.values.end()) {
    if (!absl::ParseDuration(it->second, &interval) || interval <= absl::ZeroDuration()) {
      std::fprintf(stderr, "metasrvctl watch: bad --interval\n");
      return kUsage;
    }
  }
  if (auto it = f.values.find("count"); it != f.values.end()) {
    if (!absl::SimpleAtoi(it->second, &count) || count < 1) {
      std::fprintf(stderr, "metasrvctl watch: bad --count\n");
      return kUsage;
    }
  }
  bool was_found = false;
  std::map<uint32_t, Row> before;
  for (int64_t i = 0; count < 0 || i < count; ++i) {
    if (i > 0) absl::SleepFor(interval);
    bool found = false;
    std::map<uint32_t, Row> now;
    grpc::Status s = FetchState(c, {}, &found, &now);
    if (!s.ok()) return Fail(s);
    const std::string t = absl::FormatTime("%H:%M:%E3S", absl::Now(), absl::UTCTimeZone());
    if (was_found && !found) std::printf("%s reset: no flow state\n", t.c_str());
    for (const auto& [id, r] : now) {
      auto old = before.find(id);
      const std::string values = absl::StrCat(
          "state_size=", Cell(r, 1, static_cast<int64_t>(r.state_size)),
          " last_exec_time_ms=", Cell(r, 2, r.last_exec),
          " start_time_ms=", Cell(r, 4, r.start));
      if (old == before.end()) {
        std::printf("%s new flow %u %s\n", t.c_str(), id, values.c_str());
      } else if (old->second != r) {
        std::printf("%s flow %u %s\n", t.c_str(), id, values.c_str());
      }
    }
    for (const auto& [id, r] : before) {
      if (!now.count(id)) std::printf("%s flow %u removed\n", t.c_str(), id);
    }
    std::fflush(stdout);
    before = std::move(now);
    was_found = found;
  }
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  // Global flags come before the command: argv[1, i).
  int i = 1;
  while (i < argc && absl::StartsWith(argv[i], "--")) ++i;
  Flags global;
  if (!Parse(i, argv, 1, &global)) {
    std::fprintf(stderr, "%s", kUsageText);
    return kUsage;
  }
  if (global.values.count("help") && i == argc) {
    std::printf("%s", kUsageText);
    return kOk;
  }
  if (i >= argc) {
    std::fprintf(stderr, "%s", kUsageText);
    return kUsage;
  }
  const std::string command = argv[i];
  auto help = kCommandHelp.find(command);
  if (help == kCommandHelp.end()) {
    std::fprintf(stderr, "metasrvctl: unknown command '%s'\n%s", command.c_str(),
                 kUsageText);
    return kUsage;
  }
  Flags flags;
  if (!Parse(argc, argv, i + 1, &flags) || !flags.positional.empty()) {
    std::fprintf(stderr, "%s", help->second.c_str());
    return kUsage;
  }
  if (flags.values.count("help")) {
    std::printf("%s", help->second.c_str());
    return kOk;
  }
  static const std::map<std::string, std::vector<std::string>> kAllowed = {
      {"get", {"json", "flow"}}, {"leader", {}}, {"peers", {}},
      {"reset", {"token_file"}}, {"watch", {"interval", "count"}}};
  for (const auto& [name, value] : flags.values) {
    const auto& ok = kAllowed.at(command);
    if (std::find(ok.begin(), ok.end(), name) == ok.end()) {
      std::fprintf(stderr, "metasrvctl %s: unknown flag --%s\n%s", command.c_str(),
                   name.c_str(), help->second.c_str());
      return kUsage;
    }
  }
  for (const auto& [name, value] : global.values) {
    if (name != "addr" && name != "timeout" && name != "tls_ca" && name != "tls_cert" &&
        name != "tls_key") {
      std::fprintf(stderr, "metasrvctl: unknown flag --%s\n%s", name.c_str(), kUsageText);
      return kUsage;
    }
  }
  const std::string addr =
      global.values.count("addr") ? global.values["addr"] : "127.0.0.1:3002";
  absl::Duration timeout = absl::Seconds(5);
  if (global.values.count("timeout") &&
      !absl::ParseDuration(global.values["timeout"], &timeout)) {
    std::fprintf(stderr, "metasrvctl: bad --timeout\n");
    return kUsage;
  }
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (global.values.count("tls_ca") || global.values.count("tls_cert")) {
    grpc::SslCredentialsOptions o;
    bool ok = true;
    if (global.values.count("tls_ca")) o.pem_root_certs = ReadFile(global.values["tls_ca"], &ok);
    if (ok && global.values.count("tls_cert")) {
      o.pem_cert_chain = ReadFile(global.values["tls_cert"], &ok);
      if (ok) o.pem_private_key = ReadFile(global.values["tls_key"], &ok);
    }
    if (!ok) {
      std::fprintf(stderr, "metasrvctl: cannot read the TLS files\n");
      return kUsage;
    }
    creds = grpc::SslCredentials(o);
  }
  Client client(grpc::CreateChannel(addr, creds), timeout);
  if (command == "get") return Get(client, flags);
  if (command == "leader") return Leader(client);
  if (command == "peers") return Peers(client);
  if (command == "reset") return Reset(client, flags);
  return Watch(client, flags);
}
