#include "server/rpc/method_table.h"

#include <algorithm>
#include <array>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace metasrv::server {
namespace {

using L = LeaderPolicy;
using T = CallMetrics::Type;
using M = Method;

// A HealthCheckRequest is a service name: small.
constexpr size_t kMaxHealthRequest = 4 << 10;

// Indexed by Method. Health and reflection are served by every replica to
// anyone: they are how operators look at a replica.
constexpr std::array<MethodRow, kMethodCount> kMethods = {{
    {M::kHeartbeat, "/greptime.v1.meta.Heartbeat/Heartbeat", "Heartbeat",
     T::kBidiStream, "greptime.v1.meta.HeartbeatRequest", L::kLeaderOrAnswer,
     false, true},
    {M::kAskLeader, "/greptime.v1.meta.Heartbeat/AskLeader", "AskLeader",
     T::kUnary, "greptime.v1.meta.AskLeaderRequest", L::kAnywhere, false, true},
    {M::kBatchGet, "/greptime.v1.meta.Cluster/BatchGet", "BatchGet", T::kUnary,
     "greptime.v1.meta.BatchGetRequest", L::kLeaderOrAnswer, false, false},
    {M::kRange, "/greptime.v1.meta.Cluster/Range", "Range", T::kUnary,
     "greptime.v1.meta.RangeRequest", L::kLeaderOrAnswer, false, false},
    {M::kMetasrvPeers, "/greptime.v1.meta.Cluster/MetasrvPeers", "MetasrvPeers",
     T::kUnary, "greptime.v1.meta.MetasrvPeersRequest", L::kLeaderOrAnswer,
     false, false},
    {M::kGetFlowState, "/metasrv.v1.FlowState/GetFlowState", "GetFlowState",
     T::kUnary, "metasrv.v1.GetFlowStateRequest", L::kLeaderOrRefuse, false,
     false},
    {M::kListFlownodes, "/metasrv.v1.FlowState/ListFlownodes", "ListFlownodes",
     T::kUnary, "metasrv.v1.ListFlownodesRequest", L::kLeaderOrRefuse, false,
     false},
    {M::kWatchFlowState, "/metasrv.v1.FlowState/WatchFlowState",
     "WatchFlowState", T::kServerStream, "metasrv.v1.WatchFlowStateRequest",
     L::kLeaderOrRefuse, false, false},
    {M::kLeaderChange, "/metasrv.v1.Admin/LeaderChange", "LeaderChange",
     T::kUnary, "metasrv.v1.LeaderChangeRequest", L::kLeaderOrRefuse, true,
     false},
    {M::kForgetFlows, "/metasrv.v1.Admin/ForgetFlows", "ForgetFlows", T::kUnary,
     "metasrv.v1.ForgetFlowsRequest", L::kLeaderOrRefuse, true, false},
    {M::kForgetNodes, "/metasrv.v1.Admin/ForgetNodes", "ForgetNodes", T::kUnary,
     "metasrv.v1.ForgetNodesRequest", L::kLeaderOrRefuse, true, false},
    {M::kDescribeReplica, "/metasrv.v1.Replica/Describe", "Replica.Describe",
     T::kUnary, "metasrv.v1.DescribeReplicaRequest", L::kAnywhere, false, true},
    {M::kHealthCheck, "/grpc.health.v1.Health/Check", "Health.Check", T::kUnary,
     "grpc.health.v1.HealthCheckRequest", L::kAnywhere, false, true,
     kMaxHealthRequest},
    {M::kHealthWatch, "/grpc.health.v1.Health/Watch", "Health.Watch",
     T::kServerStream, "grpc.health.v1.HealthCheckRequest", L::kAnywhere, false,
     true, kMaxHealthRequest},
    {M::kReflectionV1,
     "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
     "ServerReflectionInfo", T::kBidiStream,
     "grpc.reflection.v1.ServerReflectionRequest", L::kAnywhere, false, false},
    {M::kReflectionV1alpha,
     "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
     "ServerReflectionInfo(v1alpha)", T::kBidiStream,
     "grpc.reflection.v1alpha.ServerReflectionRequest", L::kAnywhere, false,
     false},
}};

}  // namespace

const MethodRow& RowOf(Method method) {
  return kMethods[static_cast<size_t>(method)];
}

const MethodRow* FindMethod(absl::string_view path) {
  static const auto* const by_path = [] {
    auto* map = new absl::flat_hash_map<absl::string_view, const MethodRow*>();
    for (const MethodRow& row : kMethods) (*map)[row.path] = &row;
    return map;
  }();
  auto it = by_path->find(path);
  return it == by_path->end() ? nullptr : it->second;
}

const std::vector<std::string>& ServiceNames() {
  static const auto* const names = [] {
    auto* out = new std::vector<std::string>();
    for (const MethodRow& row : kMethods) {
      // "/package.Service/Method": between the first and the last slash.
      const absl::string_view path(row.path);
      std::string service(path.substr(1, path.rfind('/') - 1));
      if (std::find(out->begin(), out->end(), service) == out->end()) {
        out->push_back(std::move(service));
      }
    }
    return out;
  }();
  return *names;
}

absl::StatusOr<Admission> AdmitLeader(Method method,
                                      const core::Leadership& leadership) {
  const MethodRow& row = RowOf(method);
  if (row.leader == LeaderPolicy::kAnywhere) return Admission{};
  const core::Leadership::Term term = leadership.CurrentTerm();
  if (term.leading) {
    return Admission{Admission::Kind::kServe, term.state_term};
  }
  if (row.leader == LeaderPolicy::kLeaderOrAnswer) {
    return Admission{Admission::Kind::kAnswerNotLeader, std::nullopt};
  }
  return absl::FailedPreconditionError(core::NotLeaderMessage(leadership));
}

CallKind CallKindOf(Method method) {
  switch (method) {
    case Method::kHeartbeat:
      return CallKind::kHeartbeat;
    case Method::kWatchFlowState:
      return CallKind::kWatch;
    case Method::kHealthWatch:
      return CallKind::kHealthWatch;
    case Method::kReflectionV1:
    case Method::kReflectionV1alpha:
      return CallKind::kReflection;
    default:
      return CallKind::kUnary;
  }
}

}  // namespace metasrv::server
