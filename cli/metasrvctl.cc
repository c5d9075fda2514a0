// metasrvctl: the metasrv from ops scripts, without grpcurl.
//
//   metasrvctl [--addr=HOST:PORT] [TLS flags] COMMAND [command flags]
//
// Exit codes: 0 ok, 1 error (the call failed), 2 usage.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "cli/commands.h"

namespace {

using namespace metasrvctl;  // NOLINT: the commands and their types.

const char kUsageText[] =
    "usage: metasrvctl [--addr=HOST:PORT] [--timeout=5s] [--tls_ca=PEM]\n"
    "                  [--tls_cert=PEM --tls_key=PEM] COMMAND [flags]\n"
    "\n"
    "commands:\n"
    "  get      print the aggregated flow state\n"
    "  nodes    print the flownodes and when they were last heard from\n"
    "  leader   print the leader's address\n"
    "  peers    print the metasrv replicas\n"
    "  reset    leader change: drop all flow state (admin)\n"
    "  forget   remove dropped flows from every node's report (admin)\n"
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
    {"nodes",
     "usage: metasrvctl nodes [--json]\n"
     "Prints every flownode the leader heard from since it began leading: its\n"
     "id, address, last heartbeat and report (UTC), flow count, host and\n"
     "version (ListFlownodes).\n"},
    {"forget",
     "usage: metasrvctl forget --flow=ID,... [--token_file=FILE]\n"
     "Removes the flows from every node's report and from the aggregate\n"
     "(ForgetFlows), e.g. after they were dropped. A node that still reports\n"
     "one brings it back. Sends the admin token from FILE like reset.\n"},
    {"watch",
     "usage: metasrvctl watch [--count=N]\n"
     "Subscribes to the flow state (WatchFlowState) and prints one line per\n"
     "change: new, changed and removed flows, and resets. The server pushes at\n"
     "most once per its --watch_min_interval. Stops after N states (default:\n"
     "never).\n"},
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
      {"get", {"json", "flow"}},          {"nodes", {"json"}},
      {"leader", {}},                     {"peers", {}},
      {"reset", {"token_file"}},          {"forget", {"flow", "token_file"}},
      {"watch", {"count"}}};
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
  if (command == "nodes") return Nodes(client, flags);
  if (command == "forget") return Forget(client, flags);
  return Watch(client, flags);
}
