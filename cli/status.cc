// metasrvctl status: one row per replica --addr names, as etcdctl's
// `endpoint status` gives one per endpoint.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "greptime/v1/meta/cluster.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "metasrv/v1/metasrv.grpc.pb.h"

namespace metasrvctl {
namespace {

namespace meta = greptime::v1::meta;

// What one replica says of itself.
struct Row {
  std::string addr;                // As --addr names it.
  std::string health = "-";        // SERVING, NOT_SERVING, or the call's error.
  bool answered = false;           // Its health call succeeded.
  std::string role = "-";          // leader, follower or "-".
  std::string leader = "-";        // The leader it names.
  std::string version = "-";       // From the leader's MetasrvPeers.
  int64_t nodes = -1, flows = -1;  // On the leader; -1: not known.
};

void Ask(const Client& c, Row* row) {
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
                        : "ERROR";
      return;
    }
    row->answered = true;
    row->health = grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
        resp.status());
  }
  const std::string leader = AskLeaderOf(channel, c.timeout());
  if (!leader.empty()) row->leader = leader;
  auto flow_state = metasrv::v1::FlowState::NewStub(channel);
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  metasrv::v1::ListFlownodesResponse nodes;
  grpc::Status listed = flow_state->ListFlownodes(&ctx, {}, &nodes);
  if (listed.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
    row->role = "follower";  // Our own API: "not leader; ...".
    return;
  }
  if (!listed.ok()) return;
  row->role = "leader";
  row->nodes = nodes.nodes_size();
  grpc::ClientContext get_ctx;
  c.Prepare(&get_ctx);
  metasrv::v1::GetFlowStateResponse state;
  if (flow_state->GetFlowState(&get_ctx, {}, &state).ok()) {
    row->flows = state.flow_ids_size();
  }
}

// The version MetasrvPeers gave for `addr`, else "-".
std::string VersionOf(const meta::MetasrvPeersResponse& peers,
                      const std::string& addr) {
  if (peers.leader().peer().addr() == addr) {
    return peers.leader().info().version();
  }
  for (const auto& follower : peers.followers()) {
    if (follower.peer().addr() == addr) return follower.info().version();
  }
  return "-";
}

}  // namespace

int Status(const Client& c, const Flags& f) {
  std::vector<Row> rows;
  bool any = false;
  const Row* leader = nullptr;
  for (const std::string& addr : c.replicas()) {
    rows.push_back(Row{addr});
  }
  for (Row& row : rows) {
    Ask(c, &row);
    any = any || row.answered;
    if (row.role == "leader") leader = &row;
  }
  // Every replica's version, from the leader's list of peers (its own
  // first: --addr may name it otherwise than it advertises itself).
  if (leader != nullptr) {
    auto cluster = meta::Cluster::NewStub(c.ChannelTo(leader->addr));
    grpc::ClientContext ctx;
    c.Prepare(&ctx);
    meta::MetasrvPeersRequest req;
    req.mutable_header()->set_role(meta::FRONTEND);
    meta::MetasrvPeersResponse peers;
    if (cluster->MetasrvPeers(&ctx, req, &peers).ok() &&
        !peers.header().has_error()) {
      for (Row& row : rows) {
        if (!row.answered) continue;
        const std::string v = &row == leader ? peers.leader().info().version()
                                             : VersionOf(peers, row.addr);
        if (!v.empty()) row.version = v;
      }
    }
  }
  if (FlagOn(f, "json")) {
    google::protobuf::Value out;
    auto* list = out.mutable_list_value();
    for (const Row& row : rows) {
      auto* fields =
          list->add_values()->mutable_struct_value()->mutable_fields();
      (*fields)["addr"].set_string_value(row.addr);
      (*fields)["health"].set_string_value(row.health);
      (*fields)["role"].set_string_value(row.role);
      (*fields)["leader"].set_string_value(row.leader);
      (*fields)["version"].set_string_value(row.version);
      if (row.nodes >= 0) (*fields)["nodes"].set_number_value(row.nodes);
      if (row.flows >= 0) (*fields)["flows"].set_number_value(row.flows);
    }
    if (PrintJson(out) != kOk) return kError;
  } else {
    std::printf("%-22s %-12s %-9s %-22s %-10s %-7s %s\n", "ADDRESS", "HEALTH",
                "ROLE", "LEADER", "VERSION", "NODES", "FLOWS");
    for (const Row& row : rows) {
      std::printf("%-22s %-12s %-9s %-22s %-10s %-7s %s\n", row.addr.c_str(),
                  row.health.c_str(), row.role.c_str(), row.leader.c_str(),
                  row.version.c_str(),
                  row.nodes >= 0 ? std::to_string(row.nodes).c_str() : "-",
                  row.flows >= 0 ? std::to_string(row.flows).c_str() : "-");
    }
  }
  if (!any) {
    std::fprintf(stderr, "metasrvctl status: no replica answered\n");
    return kError;
  }
  return kOk;
}

}  // namespace metasrvctl
