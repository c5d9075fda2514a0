#include "cli/commands.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/inert_text.h"
#include "greptime/v1/meta/cluster.grpc.pb.h"
#include "greptime/v1/meta/heartbeat.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "metasrv/v1/metasrv.grpc.pb.h"

namespace metasrvctl {
namespace {

namespace meta = greptime::v1::meta;

// A string from the server as a table cell: inert on a terminal (a node's
// address or host name is whatever it sent), "-" when empty.
std::string Shown(const std::string& text) {
  return text.empty() ? std::string("-") : metasrv::core::Inert(text);
}

}  // namespace

const char* StatusCodeName(grpc::StatusCode code) {
  static const char* const kNames[] = {"ok",
                                       "cancelled",
                                       "unknown",
                                       "invalid argument",
                                       "deadline exceeded",
                                       "not found",
                                       "already exists",
                                       "permission denied",
                                       "resource exhausted",
                                       "failed precondition",
                                       "aborted",
                                       "out of range",
                                       "unimplemented",
                                       "internal",
                                       "unavailable",
                                       "data loss",
                                       "unauthenticated"};
  const int n = static_cast<int>(code);
  return n >= 0 && n <= 16 ? kNames[n] : "error";
}

int Fail(const grpc::Status& s, bool token_given) {
  std::fprintf(stderr, "metasrvctl: %s: %s\n", StatusCodeName(s.error_code()),
               metasrv::core::Inert(s.error_message()).c_str());
  // What usually causes it.
  if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
      s.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
    std::fprintf(stderr,
                 token_given
                     ? "metasrvctl: the server refused the token of "
                       "--token_file: it is not the one in its "
                       "--admin_token_file\n"
                     : "metasrvctl: admin calls need the server's token: "
                       "--token_file=FILE (or run on the server's host)\n");
  } else if (s.error_message().find("DNS resolution failed") !=
             std::string::npos) {
    std::fprintf(stderr,
                 "metasrvctl: the leader's advertised address does not "
                 "resolve here: name every replica in --addr (commands go to "
                 "the one that leads, as --addr gives it), or run metasrvctl "
                 "where that name resolves\n");
  } else if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
    std::fprintf(stderr,
                 "metasrvctl: is it up at --addr? If it serves TLS, pass "
                 "--tls_ca=PEM (a plaintext client cannot talk to it)\n");
  }
  return kError;
}

namespace {

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

std::map<uint32_t, Row> RowsOf(const metasrv::v1::GetFlowStateResponse& resp) {
  std::map<uint32_t, Row> rows;
  for (int i = 0; i < resp.flow_ids_size(); ++i) {
    rows[resp.flow_ids(i)] = {resp.fields(i), resp.state_sizes(i),
                              resp.last_exec_times_ms(i),
                              resp.start_times_ms(i)};
  }
  return rows;
}

// The ids of flag `name` (comma-separated); false (after saying why) for
// one that is not a number of type Id.
template <typename Id>
bool ParseIds(const Flags& f, const char* command, const char* name,
              std::vector<Id>* ids) {
  auto it = f.values.find(name);
  if (it == f.values.end()) return true;
  for (absl::string_view s :
       absl::StrSplit(it->second, ',', absl::SkipEmpty())) {
    Id id;
    if (!absl::SimpleAtoi(s, &id)) {
      std::fprintf(stderr, "metasrvctl %s: bad %s id '%s'\n", command, name,
                   std::string(s).c_str());
      return false;
    }
    ids->push_back(id);
  }
  return true;
}

}  // namespace

bool ParseFlowIds(const Flags& f, const char* command,
                  std::vector<uint32_t>* ids) {
  return ParseIds(f, command, "flow", ids);
}

bool ParseNodeIds(const Flags& f, const char* command,
                  std::vector<uint64_t>* ids) {
  return ParseIds(f, command, "node", ids);
}

int PrintJson(const google::protobuf::Value& value) {
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(value, &json).ok()) {
    std::fprintf(stderr, "metasrvctl: cannot print JSON\n");
    return kError;
  }
  std::printf("%s\n", json.c_str());
  return kOk;
}

namespace {

std::string Cell(const Row& r, uint32_t bit, int64_t v) {
  return (r.fields & bit) ? absl::StrCat(v) : "-";
}

}  // namespace

bool FlagOn(const Flags& f, const std::string& name) {
  auto it = f.values.find(name);
  return it != f.values.end() && it->second != "false";
}

std::string ReadFile(const std::string& path, bool* ok) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  *ok = static_cast<bool>(in);
  return s.str();
}

std::shared_ptr<grpc::Channel> Client::ChannelTo(
    const std::string& addr) const {
  grpc::ChannelArguments args;
  args.SetInt("metasrvctl.replica",
              static_cast<int>(std::hash<std::string>()(addr)));
  return grpc::CreateCustomChannel(addr,
                                   credentials_ != nullptr
                                       ? credentials_
                                       : grpc::InsecureChannelCredentials(),
                                   args);
}

std::string FindLeader(const std::vector<std::string>& replicas,
                       const std::shared_ptr<grpc::ChannelCredentials>& creds,
                       absl::Duration timeout) {
  // All asked at once: in an incident some replicas are silent, and each
  // would cost a whole timeout in turn.
  struct Answer {
    bool leads = false;  // It says it leads (or serves alone).
    std::string named;   // The leader it names; empty: none.
  };
  std::vector<Answer> answers(replicas.size());
  std::vector<std::thread> askers;
  for (size_t i = 0; i < replicas.size(); ++i) {
    askers.emplace_back([&, i] {
      const Client probe(grpc::CreateChannel(replicas[i], creds), timeout);
      metasrv::v1::DescribeReplicaResponse self;
      const grpc::Status described = Describe(probe, probe.channel(), &self);
      if (described.ok()) {
        answers[i].leads = self.role() == metasrv::v1::REPLICA_ROLE_LEADER ||
                           self.role() == metasrv::v1::REPLICA_ROLE_STANDALONE;
        answers[i].named = self.leader_addr();
      } else if (described.error_code() !=
                     grpc::StatusCode::DEADLINE_EXCEEDED &&
                 described.error_code() != grpc::StatusCode::UNAVAILABLE) {
        // Not ours (GreptimeDB's own metasrv): it answers AskLeader.
        answers[i].named = AskLeaderOf(probe.channel(), timeout);
      }
    });
  }
  for (std::thread& asker : askers) asker.join();
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (answers[i].leads) return replicas[i];
  }
  for (const Answer& answer : answers) {
    if (!answer.named.empty()) return answer.named;
  }
  return replicas.front();
}

Client Client::Following() const {
  Client now = *this;
  if (!replicas_.empty()) {
    now.channel_ = grpc::CreateChannel(
        FindLeader(replicas_,
                   credentials_ != nullptr ? credentials_
                                           : grpc::InsecureChannelCredentials(),
                   timeout_),
        credentials_ != nullptr ? credentials_
                                : grpc::InsecureChannelCredentials());
  }
  return now;
}

bool Follow::Lost(const grpc::Status& s) {
  if (s.error_code() != grpc::StatusCode::UNAVAILABLE &&
      s.error_code() != grpc::StatusCode::ABORTED &&
      s.error_code() != grpc::StatusCode::FAILED_PRECONDITION) {
    return false;
  }
  const absl::Time now = absl::Now();
  if (lost_since_ == absl::InfiniteFuture()) {
    lost_since_ = now;
    std::fprintf(stderr, "metasrvctl %s: %s; following the leader\n", command_,
                 metasrv::core::Inert(s.error_message()).c_str());
  }
  if (now - lost_since_ > kFollowFor) return false;
  absl::SleepFor(absl::Milliseconds(500));
  return true;
}

void Client::Prepare(grpc::ClientContext* ctx) const {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    absl::ToChronoMilliseconds(timeout_));
}

int Get(const Client& c, const Flags& f) {
  std::vector<uint32_t> ids;
  if (!ParseFlowIds(f, "get", &ids)) return kUsage;
  auto stub = metasrv::v1::FlowState::NewStub(c.channel());
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  metasrv::v1::GetFlowStateRequest req;
  for (uint32_t id : ids) req.add_flow_ids(id);
  metasrv::v1::GetFlowStateResponse resp;
  grpc::Status s = stub->GetFlowState(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  const bool found = resp.found();
  const std::map<uint32_t, Row> rows = RowsOf(resp);
  if (FlagOn(f, "json")) {
    google::protobuf::Value out;
    auto* fields = out.mutable_struct_value()->mutable_fields();
    (*fields)["found"].set_bool_value(found);
    auto* flows = (*fields)["flows"].mutable_list_value();
    for (const auto& [id, r] : rows) {
      auto* flow =
          flows->add_values()->mutable_struct_value()->mutable_fields();
      (*flow)["flow_id"].set_number_value(id);
      if (r.fields & 1) (*flow)["state_size"].set_number_value(r.state_size);
      if (r.fields & 2)
        (*flow)["last_exec_time_ms"].set_number_value(r.last_exec);
      if (r.fields & 4) (*flow)["start_time_ms"].set_number_value(r.start);
    }
    return PrintJson(out);
  }
  if (!found) {
    std::printf("no flow state (no report since the last leader change)\n");
    return kOk;
  }
  std::printf("%-12s %-14s %-20s %-20s\n", "FLOW_ID", "STATE_SIZE",
              "LAST_EXEC_TIME_MS", "START_TIME_MS");
  for (const auto& [id, r] : rows) {
    std::printf("%-12u %-14s %-20s %-20s\n", id,
                Cell(r, 1, static_cast<int64_t>(r.state_size)).c_str(),
                Cell(r, 2, r.last_exec).c_str(), Cell(r, 4, r.start).c_str());
  }
  return kOk;
}

std::string AskLeaderOf(const std::shared_ptr<grpc::Channel>& channel,
                        absl::Duration timeout, grpc::Status* status) {
  auto stub = meta::Heartbeat::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   absl::ToChronoMilliseconds(timeout));
  meta::AskLeaderRequest req;
  req.mutable_header()->set_role(meta::FRONTEND);
  meta::AskLeaderResponse resp;
  grpc::Status s = stub->AskLeader(&ctx, req, &resp);
  if (status != nullptr) *status = s;
  return s.ok() ? resp.leader().addr() : std::string();
}

int Leader(const Client& c, const Flags& f) {
  grpc::Status s;
  const std::string leader = AskLeaderOf(c.channel(), c.timeout(), &s);
  if (leader.empty()) {
    // GreptimeDB's answer without a leader is INTERNAL, masked ("Internal
    // error: 1003"); the replica's own description says why in words.
    metasrv::v1::DescribeReplicaResponse self;
    if (!Describe(c, c.channel(), &self).ok()) return Fail(s);
    std::fprintf(stderr, "metasrvctl leader: no leader is known%s%s\n",
                 self.no_leader_reason().empty() ? "" : ": ",
                 metasrv::core::Inert(self.no_leader_reason()).c_str());
    return kError;
  }
  if (FlagOn(f, "json")) {
    google::protobuf::Value out;
    (*out.mutable_struct_value()->mutable_fields())["leader"].set_string_value(
        leader);
    return PrintJson(out);
  }
  std::printf("%s\n", metasrv::core::Inert(leader).c_str());
  return kOk;
}

int Peers(const Client& c, const Flags& f) {
  auto stub = meta::Cluster::NewStub(c.channel());
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  meta::MetasrvPeersRequest req;
  req.mutable_header()->set_role(meta::FRONTEND);
  meta::MetasrvPeersResponse resp;
  grpc::Status s = stub->MetasrvPeers(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  // A follower answers with the not-leader error and no peers, as
  // GreptimeDB's do: say so rather than print nothing.
  if (resp.header().has_error()) {
    std::fprintf(stderr,
                 "metasrvctl peers: %s (ask the leader: metasrvctl leader)\n",
                 metasrv::core::Inert(resp.header().error().err_msg()).c_str());
    return kError;
  }
  if (FlagOn(f, "json")) {
    google::protobuf::Value out;
    auto* fields = out.mutable_struct_value()->mutable_fields();
    (*fields)["leader"].set_string_value(resp.leader().peer().addr());
    auto* followers = (*fields)["followers"].mutable_list_value();
    for (const auto& follower : resp.followers()) {
      followers->add_values()->set_string_value(follower.peer().addr());
    }
    return PrintJson(out);
  }
  if (resp.has_leader())
    std::printf("leader    %s\n",
                metasrv::core::Inert(resp.leader().peer().addr()).c_str());
  for (const auto& follower : resp.followers())
    std::printf("follower  %s\n",
                metasrv::core::Inert(follower.peer().addr()).c_str());
  return kOk;
}

int Nodes(const Client& c, const Flags& f) {
  auto stub = metasrv::v1::FlowState::NewStub(c.channel());
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  metasrv::v1::ListFlownodesResponse resp;
  grpc::Status s = stub->ListFlownodes(&ctx, {}, &resp);
  if (!s.ok()) return Fail(s);
  if (FlagOn(f, "json")) {
    google::protobuf::Value out;
    auto* list = out.mutable_list_value();
    for (const metasrv::v1::Flownode& n : resp.nodes()) {
      auto* node = list->add_values()->mutable_struct_value()->mutable_fields();
      (*node)["node_id"].set_number_value(static_cast<double>(n.node_id()));
      (*node)["peer_addr"].set_string_value(n.peer_addr());
      (*node)["last_heartbeat_ms"].set_number_value(
          static_cast<double>(n.last_heartbeat_ms()));
      (*node)["last_report_ms"].set_number_value(
          static_cast<double>(n.last_report_ms()));
      (*node)["flow_count"].set_number_value(
          static_cast<double>(n.flow_count()));
      (*node)["hostname"].set_string_value(n.info().hostname());
      (*node)["version"].set_string_value(n.info().version());
      if (!n.refused().empty()) {
        (*node)["refused"].set_string_value(n.refused());
        (*node)["refused_reports"].set_number_value(
            static_cast<double>(n.refused_reports()));
        (*node)["last_refused_ms"].set_number_value(
            static_cast<double>(n.last_refused_ms()));
      }
    }
    return PrintJson(out);
  }
  std::printf("%-10s %-22s %-24s %-24s %-7s %-16s %-10s %s\n", "NODE_ID",
              "PEER_ADDR", "LAST_HEARTBEAT", "LAST_REPORT", "FLOWS", "HOSTNAME",
              "VERSION", "REFUSED");
  auto when = [](int64_t ms) {
    return ms == 0 ? std::string("-")
                   : absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ",
                                      absl::FromUnixMillis(ms),
                                      absl::UTCTimeZone());
  };
  for (const metasrv::v1::Flownode& n : resp.nodes()) {
    const std::string refused =
        n.refused().empty()
            ? std::string("-")
            : absl::StrCat(n.refused_reports(), ", latest ",
                           when(n.last_refused_ms()), ": ", n.refused());
    std::printf(
        "%-10llu %-22s %-24s %-24s %-7llu %-16s %-10s %s\n",
        static_cast<unsigned long long>(n.node_id()),
        Shown(n.peer_addr()).c_str(), when(n.last_heartbeat_ms()).c_str(),
        when(n.last_report_ms()).c_str(),
        static_cast<unsigned long long>(n.flow_count()),
        Shown(n.info().hostname()).c_str(), Shown(n.info().version()).c_str(),
        metasrv::core::Inert(refused).c_str());
  }
  return kOk;
}

int Health(const Client& c, const Flags& f) {
  if (c.replicas().size() > 1 && !f.values.count("service")) {
    return Status(c, f);
  }
  auto stub = grpc::health::v1::Health::NewStub(c.channel());
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  grpc::health::v1::HealthCheckRequest req;
  if (auto it = f.values.find("service"); it != f.values.end()) {
    req.set_service(it->second);
  }
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status s = stub->Check(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  const std::string status =
      grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status());
  if (FlagOn(f, "json")) {
    google::protobuf::Value out;
    (*out.mutable_struct_value()->mutable_fields())["status"].set_string_value(
        status);
    if (PrintJson(out) != kOk) return kError;
  } else {
    std::printf("%s\n", status.c_str());
  }
  return resp.status() == grpc::health::v1::HealthCheckResponse::SERVING
             ? kOk
             : kError;
}

namespace {

// One line of `watch`: "TIME new flow ID VALUES" and the like, or with
// `json` one object ({"time","event","flow_id","values"}).
void Say(bool json, const std::string& time, const char* event, uint32_t id,
         const std::string& values) {
  if (json) {
    google::protobuf::Value out;
    auto* fields = out.mutable_struct_value()->mutable_fields();
    (*fields)["time"].set_string_value(time);
    (*fields)["event"].set_string_value(event);
    if (std::string(event) != "reset") {
      (*fields)["flow_id"].set_number_value(id);
    }
    if (!values.empty()) (*fields)["values"].set_string_value(values);
    PrintJson(out);
    return;
  }
  const std::string what = std::string(event) == "reset" ? "reset:"
                           : std::string(event) == "new" ? "new flow"
                                                         : "flow";
  if (std::string(event) == "reset") {
    std::printf("%s %s %s\n", time.c_str(), what.c_str(), values.c_str());
  } else if (std::string(event) == "removed") {
    std::printf("%s flow %u removed\n", time.c_str(), id);
  } else {
    std::printf("%s %s %u %s\n", time.c_str(), what.c_str(), id,
                values.c_str());
  }
}

// Says what `msg` changed in `known` (the state as the messages so far
// say), and applies it. `first`: the first message of this subscriber.
void SayChanges(const metasrv::v1::WatchFlowStateResponse& msg, bool json,
                bool first, std::map<uint32_t, Row>* known_state) {
  std::map<uint32_t, Row>& known = *known_state;
  const std::string t =
      absl::FormatTime("%H:%M:%E3S", absl::FromUnixMillis(msg.sent_at_ms()),
                       absl::UTCTimeZone());
  // The first state is all this subscriber knows: a reset before it
  // subscribed is not news.
  if (msg.reset() && !first) {
    Say(json, t, "reset", 0, "all flow state dropped (leader change)");
    known.clear();
  }
  // A whole state: flows known but absent from it are gone.
  std::map<uint32_t, Row> rows = RowsOf(msg.state());
  std::vector<uint32_t> removed(msg.removed_flow_ids().begin(),
                                msg.removed_flow_ids().end());
  if (!msg.delta()) {
    for (const auto& [id, r] : known) {
      if (!rows.count(id)) removed.push_back(id);
    }
  }
  for (const auto& [id, r] : rows) {
    auto old = known.find(id);
    const std::string values = absl::StrCat(
        "state_size=", Cell(r, 1, static_cast<int64_t>(r.state_size)),
        " last_exec_time_ms=", Cell(r, 2, r.last_exec),
        " start_time_ms=", Cell(r, 4, r.start));
    if (old == known.end()) {
      Say(json, t, "new", id, values);
    } else if (old->second != r) {
      Say(json, t, "changed", id, values);
    }
    known[id] = r;
  }
  for (uint32_t id : removed) {
    if (known.erase(id) > 0) Say(json, t, "removed", id, "");
  }
}

}  // namespace

int Watch(const Client& c, const Flags& f) {
  int64_t count = -1;
  if (auto it = f.values.find("count"); it != f.values.end()) {
    if (!absl::SimpleAtoi(it->second, &count) || count < 1) {
      std::fprintf(stderr, "metasrvctl watch: bad --count\n");
      return kUsage;
    }
  }
  absl::Duration interval = absl::ZeroDuration();
  if (auto it = f.values.find("interval"); it != f.values.end()) {
    if (!absl::ParseDuration(it->second, &interval) ||
        interval < absl::ZeroDuration() ||
        interval > absl::Milliseconds(std::numeric_limits<uint32_t>::max())) {
      std::fprintf(stderr, "metasrvctl watch: bad --interval\n");
      return kUsage;
    }
  }
  const bool json = FlagOn(f, "json");
  metasrv::v1::WatchFlowStateRequest request;
  request.set_deltas(true);  // Changes only, after the first state.
  request.set_min_interval_ms(
      static_cast<uint32_t>(absl::ToInt64Milliseconds(interval)));
  metasrv::v1::WatchFlowStateResponse msg;
  std::map<uint32_t, Row> known;  // The state, as the messages so far say.
  int64_t seen = 0;
  Client leader = c;
  Follow follow("watch");
  for (;;) {
    auto stub = metasrv::v1::FlowState::NewStub(leader.channel());
    grpc::ClientContext ctx;  // No deadline: it runs until stopped.
    std::unique_ptr<grpc::ClientReader<metasrv::v1::WatchFlowStateResponse>>
        reader = stub->WatchFlowState(&ctx, request);
    bool first_of_stream = true;
    while (reader->Read(&msg)) {
      // A new leader's first state: what was known went with the old one.
      if (first_of_stream && seen > 0) msg.set_reset(true);
      first_of_stream = false;
      follow.Found();
      SayChanges(msg, json, /*first=*/seen == 0, &known);
      std::fflush(stdout);
      if (++seen == count) {
        ctx.TryCancel();
        reader->Finish().IgnoreError();
        return kOk;
      }
    }
    const grpc::Status ended = reader->Finish();
    if (!follow.Lost(ended)) return Fail(ended);
    leader = c.Following();
  }
}

}  // namespace metasrvctl
