// metasrvctl status: one row per replica --addr names, as etcdctl's
// `endpoint status` gives one per endpoint, from each replica's own
// Replica.Describe; and what is wrong when no replica names a leader.
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "core/inert_text.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "metasrv/v1/metasrv.grpc.pb.h"

namespace metasrvctl {

grpc::Status Describe(const Client& c,
                      const std::shared_ptr<grpc::Channel>& channel,
                      metasrv::v1::DescribeReplicaResponse* out) {
  auto stub = metasrv::v1::Replica::NewStub(channel);
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  return stub->Describe(&ctx, {}, out);
}

namespace {

// What one replica says of itself.
struct ReplicaRow {
  std::string addr;                // As --addr names it.
  std::string health = "-";        // SERVING, NOT_SERVING, or the call's error.
  bool answered = false;           // Its health call succeeded.
  std::string role = "-";          // leader, follower, standalone or "-".
  std::string leader = "-";        // The leader it names.
  std::string store = "-";         // ok, "down 32s"; "-" standalone.
  std::string version = "-";       // Its own.
  std::string no_leader;           // Why it names none, in its words.
  // What it refused our call with, or says it refuses every new call of a
  // kind with (Describe's `refusing`); empty when neither.
  std::string refusal;
  int64_t unreachable_ms = -1;     // With the store down: for how long.
  int64_t nodes = -1, flows = -1;  // On the leader; -1: not known.
};

const char* RoleName(metasrv::v1::ReplicaRole role) {
  switch (role) {
    case metasrv::v1::REPLICA_ROLE_STANDALONE:
      return "standalone";
    case metasrv::v1::REPLICA_ROLE_LEADER:
      return "leader";
    case metasrv::v1::REPLICA_ROLE_FOLLOWER:
      return "follower";
    default:
      return "-";
  }
}

void Ask(const Client& c, ReplicaRow* row) {
  std::shared_ptr<grpc::Channel> channel = c.ChannelTo(row->addr);
  {
    auto stub = grpc::health::v1::Health::NewStub(channel);
    grpc::ClientContext ctx;
    c.Prepare(&ctx);
    grpc::health::v1::HealthCheckResponse resp;
    grpc::Status s = stub->Check(&ctx, {}, &resp);
    if (!s.ok()) {
      row->health = grpc::StatusCode::UNAVAILABLE == s.error_code()
                        ? "UNREACHABLE"
                    : grpc::StatusCode::RESOURCE_EXHAUSTED == s.error_code()
                        ? "REFUSED"
                        : "ERROR";
      row->refusal = absl::StrCat(StatusCodeName(s.error_code()), ": ",
                                  s.error_message());
      return;
    }
    row->answered = true;
    row->health = grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
        resp.status());
  }
  metasrv::v1::DescribeReplicaResponse self;
  if (!Describe(c, channel, &self).ok()) {
    // A replica older than Describe (a rolling upgrade): the leader it
    // names, as AskLeader gives it.
    const std::string leader = AskLeaderOf(channel, c.timeout());
    if (!leader.empty()) row->leader = leader;
    return;
  }
  row->role = RoleName(self.role());
  if (!self.leader_addr().empty()) row->leader = self.leader_addr();
  if (!self.version().empty()) row->version = self.version();
  row->no_leader = self.no_leader_reason();
  row->refusal = self.refusing();
  if (self.has_store()) {
    if (self.store().reachable()) {
      row->store = "ok";
    } else {
      row->unreachable_ms = self.store().unreachable_for_ms();
      row->store = absl::StrCat("down ", row->unreachable_ms / 1000, "s");
    }
  }
  if (row->role != "leader" && row->role != "standalone") return;
  auto flow_state = metasrv::v1::FlowState::NewStub(channel);
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  metasrv::v1::ListFlownodesResponse nodes;
  if (flow_state->ListFlownodes(&ctx, {}, &nodes).ok()) {
    row->nodes = nodes.nodes_size();
  }
  grpc::ClientContext get_ctx;
  c.Prepare(&get_ctx);
  metasrv::v1::GetFlowStateResponse state;
  if (flow_state->GetFlowState(&get_ctx, {}, &state).ok()) {
    row->flows = state.flow_ids_size();
  }
}

void PrintRows(const std::vector<ReplicaRow>& rows, bool json) {
  if (json) {
    google::protobuf::Value out;
    auto* list = out.mutable_list_value();
    for (const ReplicaRow& row : rows) {
      auto* fields =
          list->add_values()->mutable_struct_value()->mutable_fields();
      (*fields)["addr"].set_string_value(row.addr);
      (*fields)["health"].set_string_value(row.health);
      (*fields)["role"].set_string_value(row.role);
      (*fields)["leader"].set_string_value(row.leader);
      (*fields)["store"].set_string_value(row.store);
      (*fields)["version"].set_string_value(row.version);
      if (!row.no_leader.empty()) {
        (*fields)["no_leader_reason"].set_string_value(row.no_leader);
      }
      if (!row.refusal.empty()) {
        (*fields)["refusal"].set_string_value(row.refusal);
      }
      if (row.unreachable_ms >= 0) {
        (*fields)["store_unreachable_for_ms"].set_number_value(
            row.unreachable_ms);
      }
      if (row.nodes >= 0) (*fields)["nodes"].set_number_value(row.nodes);
      if (row.flows >= 0) (*fields)["flows"].set_number_value(row.flows);
    }
    PrintJson(out);
    return;
  }
  const char* kFormat = "%-22s %-12s %-10s %-22s %-10s %-10s %-7s %s\n";
  std::printf(kFormat, "ADDRESS", "HEALTH", "ROLE", "LEADER", "STORE",
              "VERSION", "NODES", "FLOWS");
  for (const ReplicaRow& row : rows) {
    using metasrv::core::Inert;
    std::printf(kFormat, Inert(row.addr).c_str(), Inert(row.health).c_str(),
                Inert(row.role).c_str(), Inert(row.leader).c_str(),
                Inert(row.store).c_str(), Inert(row.version).c_str(),
                row.nodes >= 0 ? std::to_string(row.nodes).c_str() : "-",
                row.flows >= 0 ? std::to_string(row.flows).c_str() : "-");
  }
  for (const ReplicaRow& row : rows) {
    if (row.refusal.empty()) continue;
    std::printf("%s refuses: %s\n", metasrv::core::Inert(row.addr).c_str(),
                metasrv::core::Inert(row.refusal).c_str());
  }
}

}  // namespace

int Status(const Client& c, const Flags& f) {
  std::vector<ReplicaRow> rows;
  for (const std::string& addr : c.replicas()) {
    rows.emplace_back();
    rows.back().addr = addr;
  }
  bool any = false;
  std::set<std::string> leaders;  // The leaders the replicas name.
  for (ReplicaRow& row : rows) {
    Ask(c, &row);
    any = any || row.answered;
    if (row.leader != "-") leaders.insert(row.leader);
  }
  PrintRows(rows, FlagOn(f, "json"));
  if (!any) {
    std::string why;
    for (const ReplicaRow& row : rows) {
      if (!row.refusal.empty()) {
        why = absl::StrCat(why, why.empty() ? ": " : "; ", row.addr, " ",
                           row.refusal);
      }
    }
    std::fprintf(stderr, "metasrvctl status: no replica answered%s\n",
                 metasrv::core::Inert(why).c_str());
    return kError;
  }
  // The cluster serves only with a leader that the replicas agree on.
  if (leaders.empty()) {
    std::fprintf(stderr, "metasrvctl status: no replica names a leader\n");
    for (const ReplicaRow& row : rows) {
      if (row.no_leader.empty()) continue;
      std::fprintf(stderr, "  %s: %s\n", metasrv::core::Inert(row.addr).c_str(),
                   metasrv::core::Inert(row.no_leader).c_str());
    }
    return kError;
  }
  if (leaders.size() > 1) {
    std::fprintf(stderr,
                 "metasrvctl status: the replicas name %zu different leaders "
                 "(a failover in progress: ask again)\n",
                 leaders.size());
    return kError;
  }
  return kOk;
}

}  // namespace metasrvctl
