// metasrvctl: the metasrv from ops scripts, without grpcurl.
//
//   metasrvctl [--addr=HOST:PORT] [TLS flags] COMMAND [command flags]
//
// Exit codes: 0 ok, 1 error (the call failed), 2 usage.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "build_commit.h"  // METASRV_GIT_COMMIT, written at build time.
#include "cli/commands.h"

namespace {

using namespace metasrvctl;  // NOLINT: the commands and their types.

// Every command: its name, a line for the usage, its help, the flags it
// takes and what runs it. The one list of commands.
struct Command {
  const char* name;                         // As typed.
  const char* summary;                      // Its line in the usage.
  const char* help;                         // What `COMMAND --help` prints.
  std::vector<std::string> flags;           // The flags it takes.
  int (*run)(const Client&, const Flags&);  // Does it.
  // Whether it goes to the leader (found by AskLeader among --addr's
  // replicas), or to the replica named (health: that replica's own).
  bool to_leader = true;
};

// The commands that read.
void AddReadCommands(std::vector<Command>* commands) {
  commands->insert(
      commands->end(),
      {
          {"get",
           "print the aggregated flow state",
           "usage: metasrvctl get [--json] [--flow=ID,...]\n"
           "Prints the aggregate: per flow its state size, last execution time "
           "and\n"
           "start time (max over all flownodes), as a table or with --json as "
           "JSON.\n",
           {"json", "flow"},
           Get},
          {"nodes",
           "print the flownodes and when they were last heard from",
           "usage: metasrvctl nodes [--json]\n"
           "Prints every flownode the leader heard from since it began "
           "leading: "
           "its\n"
           "id, address, last heartbeat and report (UTC), flow count, host "
           "and\n"
           "version (ListFlownodes).\n",
           {"json"},
           Nodes},
          {"leader",
           "print the leader's address",
           "usage: metasrvctl leader [--json]\nPrints the leader's address "
           "(AskLeader).\n",
           {"json"},
           Leader},
          {"peers",
           "print the metasrv replicas",
           "usage: metasrvctl peers [--json]\n"
           "Prints the leader and the followers (MetasrvPeers).\n",
           {"json"},
           Peers},
          {"health",
           "check that the server serves (gRPC health)",
           "usage: metasrvctl health [--service=NAME] [--json]\n"
           "Asks grpc.health.v1.Health/Check (the whole server, or one "
           "service)\n"
           "and prints SERVING or NOT_SERVING. Exit code 0 only when SERVING: "
           "usable\n"
           "as a container or load-balancer health check. With several "
           "--addr\n"
           "replicas (and no --service), the per-replica view of `status`.\n",
           {"service", "json"},
           Health,
           /*to_leader=*/false},
          {"status",
           "one row per replica: health, role, leader, store, version, "
           "nodes, flows",
           "usage: metasrvctl [--addr=A,B,C] status [--json]\n"
           "Asks every replica --addr names, as etcdctl endpoint status "
           "does: its\n"
           "gRPC health, and what it says of itself (Replica.Describe): its "
           "role,\n"
           "the leader it names, its store (ok, or down and for how long), "
           "its\n"
           "version, and on the leader the flownodes and flows it holds. "
           "Exit code 1\n"
           "when no replica answers, when none names a leader (each one's "
           "reason\n"
           "is printed) or when they name different leaders.\n",
           {"json"},
           Status,
           /*to_leader=*/false},
      });
}

// The commands that change state, and those that follow it.
void AddOtherCommands(std::vector<Command>* commands) {
  commands->insert(
      commands->end(),
      {
          {"reset",
           "leader change: drop all flow state (admin)",
           "usage: metasrvctl reset [--token_file=FILE] [--json]\n"
           "Leader change: the in-memory KV is reset and all flow state "
           "dropped "
           "(with\n"
           "etcd, the leader resigns). Sends the admin token from FILE as\n"
           "'authorization: Bearer <token>'. Prints the number of keys "
           "dropped.\n",
           {"token_file", "json"},
           Reset},
          {"forget",
           "remove dropped flows, or removed flownodes (admin)",
           "usage: metasrvctl forget --flow=ID,... [--token_file=FILE] "
           "[--json]\n"
           "       metasrvctl forget --node=ID,... [--token_file=FILE] "
           "[--json]\n"
           "--flow removes the flows from every node's report and from the\n"
           "aggregate (ForgetFlows), e.g. after they were dropped; a node "
           "that\n"
           "still reports one brings it back. --node removes flownodes gone\n"
           "for good (ForgetNodes): their reports, records and cluster info,\n"
           "so they no longer count as silent; one that heartbeats again\n"
           "comes back. Sends the admin token from FILE like reset.\n",
           {"flow", "node", "token_file", "json"},
           Forget},
          {"watch",
           "print flow-state changes as they happen",
           "usage: metasrvctl watch [--interval=D] [--count=N] [--json]\n"
           "Subscribes to the flow state (WatchFlowState, changes only after "
           "the\n"
           "first state) and prints one line per change: new, changed and "
           "removed\n"
           "flows, and resets. The server pushes at\n"
           "most once per its --watch_min_interval, or per --interval (e.g. "
           "10s)\n"
           "if longer: the server rounds it up to its interval times 1, 2, 4, "
           "...,\n"
           "128. Stops after N states (default: never). With --json, one "
           "object\n"
           "per change: time, event (new, changed, removed, reset), flow_id,\n"
           "values. At a leader change it follows the new leader (a reset, "
           "then its\n"
           "state), for up to 60 s without one.\n",
           {"interval", "count", "json"},
           Watch},
          {"top",
           "the largest and the most lagging flows",
           "usage: metasrvctl top [--n=10] [--stall_after=5m] [--json]\n"
           "                      [--watch [--interval=2s] [--count=N]]\n"
           "Ranks the aggregate (GetFlowState with the nodes) as the alerting\n"
           "metrics do: the N largest states and the N flows longest without "
           "an\n"
           "execution, each with the flownode holding that maximum, and how "
           "many\n"
           "flows are stalled. --watch refreshes every --interval like top(1)\n"
           "(with --json: one line per refresh), following the leader across "
           "a\n"
           "leader change; --count stops after N.\n",
           {"n", "stall_after", "json", "watch", "interval", "count"},
           Top},
      });
}

const std::vector<Command>& Commands() {
  static const std::vector<Command>* const commands = [] {
    auto* all = new std::vector<Command>;
    AddReadCommands(all);
    AddOtherCommands(all);
    return all;
  }();
  return *commands;
}

// The flags that come before the command.
const std::vector<std::string> kGlobalFlags = {"addr", "timeout", "tls_ca",
                                               "tls_cert", "tls_key"};

std::string UsageText() {
  std::string text =
      "usage: metasrvctl [--addr=HOST:PORT,...] [--timeout=5s] [--tls_ca=PEM]\n"
      "                  [--tls_cert=PEM --tls_key=PEM] COMMAND [flags]\n"
      "\n"
      "--addr (or $METASRVCTL_ADDR) names one replica or several; commands go\n"
      "to the leader: the replica named that says it leads, as --addr gives\n"
      "it, else the leader the first that answers names (health and status:\n"
      "to each replica named, one row each).\n"
      "\n"
      "commands:\n";
  for (const Command& command : Commands()) {
    text += "  " + std::string(command.name);
    text.append(9 - std::string(command.name).size(), ' ');
    text += std::string(command.summary) + "\n";
  }
  text +=
      "\n"
      "metasrvctl help COMMAND (or COMMAND --help) describes a command;\n"
      "metasrvctl --version. Every command takes --json.\n"
      "Exit codes: 0 ok, 1 error, 2 usage.\n";
  return text;
}

const Command* FindCommand(const std::string& name) {
  for (const Command& command : Commands()) {
    if (name == command.name) return &command;
  }
  return nullptr;
}

// The first of `flags` not in `allowed`, or null.
const std::string* UnknownFlag(const Flags& flags,
                               const std::vector<std::string>& allowed) {
  for (const auto& [name, value] : flags.values) {
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      return &name;
    }
  }
  return nullptr;
}

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
        out->values[std::string(arg.substr(0, eq))] =
            std::string(arg.substr(eq + 1));
      }
    } else {
      out->positional.emplace_back(arg);
    }
  }
  return true;
}

// The replicas --addr names (comma-separated), else $METASRVCTL_ADDR,
// else the default.
std::vector<std::string> Replicas(Flags& global) {
  std::string addrs = "127.0.0.1:3002";
  if (global.values.count("addr")) {
    addrs = global.values["addr"];
  } else if (const char* env = std::getenv("METASRVCTL_ADDR");
             env != nullptr && *env != '\0') {
    addrs = env;
  }
  std::vector<std::string> out =
      absl::StrSplit(addrs, ',', absl::SkipWhitespace());
  if (out.empty()) out.push_back("127.0.0.1:3002");
  return out;
}

// The channel the global flags ask for; nullopt (after saying why) when
// they are wrong.
std::optional<std::unique_ptr<Client>> MakeClient(Flags& global,
                                                  bool to_leader) {
  const std::vector<std::string> replicas = Replicas(global);
  absl::Duration timeout = absl::Seconds(5);
  if (global.values.count("timeout") &&
      !absl::ParseDuration(global.values["timeout"], &timeout)) {
    std::fprintf(stderr, "metasrvctl: bad --timeout\n");
    return std::nullopt;
  }
  std::shared_ptr<grpc::ChannelCredentials> creds =
      grpc::InsecureChannelCredentials();
  if (global.values.count("tls_cert") != global.values.count("tls_key")) {
    std::fprintf(stderr, "metasrvctl: --tls_cert and --tls_key go together\n");
    return std::nullopt;
  }
  if (global.values.count("tls_ca") || global.values.count("tls_cert")) {
    grpc::SslCredentialsOptions o;
    bool ok = true;
    if (global.values.count("tls_ca")) {
      o.pem_root_certs = ReadFile(global.values["tls_ca"], &ok);
      if (ok && o.pem_root_certs.find("-----BEGIN CERTIFICATE-----") ==
                    std::string::npos) {
        std::fprintf(stderr,
                     "metasrvctl: --tls_ca=%s holds no PEM certificate\n",
                     global.values["tls_ca"].c_str());
        return std::nullopt;
      }
    }
    if (ok && global.values.count("tls_cert")) {
      o.pem_cert_chain = ReadFile(global.values["tls_cert"], &ok);
      if (ok) o.pem_private_key = ReadFile(global.values["tls_key"], &ok);
    }
    if (!ok) {
      std::fprintf(stderr, "metasrvctl: cannot read the TLS files\n");
      return std::nullopt;
    }
    creds = grpc::SslCredentials(o);
  }
  const std::string addr =
      to_leader ? FindLeader(replicas, creds, timeout) : replicas.front();
  return std::make_unique<Client>(grpc::CreateChannel(addr, creds), timeout,
                                  replicas, creds);
}

// Runs `command` with the flags after it (argv[i + 1, argc)); its exit code.
int RunCommand(const Command& command, int argc, char** argv, int i,
               Flags& global, const std::string& usage) {
  const Command* const c = &command;
  Flags flags;
  if (!Parse(argc, argv, i + 1, &flags)) {
    std::fprintf(stderr, "%s", c->help);
    return kUsage;
  }
  if (!flags.positional.empty()) {
    std::fprintf(stderr, "metasrvctl %s: unexpected argument '%s'\n%s", c->name,
                 flags.positional.front().c_str(), c->help);
    return kUsage;
  }
  if (flags.values.count("help")) {
    std::printf("%s", c->help);
    return kOk;
  }
  if (const std::string* bad = UnknownFlag(flags, c->flags)) {
    std::fprintf(stderr, "metasrvctl %s: unknown flag --%s\n%s", c->name,
                 bad->c_str(), c->help);
    return kUsage;
  }
  if (const std::string* bad = UnknownFlag(global, kGlobalFlags)) {
    std::fprintf(stderr, "metasrvctl: unknown flag --%s\n%s", bad->c_str(),
                 usage.c_str());
    return kUsage;
  }
  std::optional<std::unique_ptr<Client>> client =
      MakeClient(global, c->to_leader);
  if (!client.has_value()) return kUsage;
  return c->run(**client, flags);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && (std::string(argv[1]) == "--version" ||
                    std::string(argv[1]) == "version")) {
    std::printf("metasrvctl %s (commit %s, %s build)\n", METASRV_VERSION,
                METASRV_GIT_COMMIT, METASRV_BUILD_TYPE);
    return kOk;
  }
  if (argc == 2 &&
      (std::string(argv[1]) == "-h" || std::string(argv[1]) == "help")) {
    std::printf("%s", UsageText().c_str());
    return kOk;
  }
  if (argc == 3 && std::string(argv[1]) == "help") {
    const Command* command = FindCommand(argv[2]);
    if (command == nullptr) {
      std::fprintf(stderr, "metasrvctl: unknown command '%s'\n%s", argv[2],
                   UsageText().c_str());
      return kUsage;
    }
    std::printf("%s", command->help);
    return kOk;
  }
  // Global flags come before the command: argv[1, i).
  int i = 1;
  while (i < argc && absl::StartsWith(argv[i], "--")) ++i;
  Flags global;
  const std::string usage = UsageText();
  if (!Parse(i, argv, 1, &global)) {
    std::fprintf(stderr, "%s", usage.c_str());
    return kUsage;
  }
  if (global.values.count("help") && i == argc) {
    std::printf("%s", usage.c_str());
    return kOk;
  }
  if (i >= argc) {
    std::fprintf(stderr, "%s", usage.c_str());
    return kUsage;
  }
  const Command* command = FindCommand(argv[i]);
  if (command == nullptr) {
    std::fprintf(stderr, "metasrvctl: unknown command '%s'\n%s", argv[i],
                 usage.c_str());
    return kUsage;
  }
  return RunCommand(*command, argc, argv, i, global, usage);
}
