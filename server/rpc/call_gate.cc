#include "server/rpc/call_gate.h"

#include <array>
#include <string>

#include "server/ops/log_limit.h"

namespace metasrv::server {
namespace {

using L = LeaderPolicy;

// Indexed by Method. The heartbeat's policy is applied to each request of
// the stream, by HeartbeatHandler (which merges under the term it checked).
constexpr std::array<MethodPolicy, 11> kPolicies = {{
    {"Heartbeat", L::kLeaderOrAnswer, false},
    {"AskLeader", L::kAnywhere, false},
    {"BatchGet", L::kLeaderOrAnswer, false},
    {"Range", L::kLeaderOrAnswer, false},
    {"MetasrvPeers", L::kLeaderOrAnswer, false},
    {"GetFlowState", L::kLeaderOrRefuse, false},
    {"ListFlownodes", L::kLeaderOrRefuse, false},
    {"WatchFlowState", L::kLeaderOrRefuse, false},
    {"LeaderChange", L::kLeaderOrRefuse, true},
    {"ForgetFlows", L::kLeaderOrRefuse, true},
    {"ForgetNodes", L::kLeaderOrRefuse, true},
}};
static_assert(kPolicies.size() == static_cast<size_t>(Method::kForgetNodes) + 1,
              "one row per Method");

}  // namespace

const MethodPolicy& PolicyOf(Method method) {
  return kPolicies[static_cast<size_t>(method)];
}

CallGate::CallGate(const core::Leadership* leadership, AdminAuth auth)
    : leadership_(leadership), auth_(std::move(auth)) {}

void CallGate::SetAdminAuth(AdminAuth auth) {
  absl::MutexLock lock(&auth_mu_);
  auth_ = std::move(auth);
}

absl::StatusOr<Admission> CallGate::Admit(
    Method method, grpc::ServerContextBase* context) const {
  const MethodPolicy& policy = PolicyOf(method);
  if (policy.admin) {
    const auto& metadata = context->client_metadata();
    auto it = metadata.find("authorization");
    absl::string_view authorization;
    if (it != metadata.end()) {
      authorization = absl::string_view(it->second.data(), it->second.size());
    }
    absl::Status allowed;
    {
      absl::MutexLock lock(&auth_mu_);
      allowed = auth_.Check(authorization, context->peer());
    }
    if (!allowed.ok()) {
      LogLimited(spdlog::level::warn, "admin_call_refused",
                 "admin call {} from {} refused: {}", policy.name,
                 context->peer(), std::string(allowed.message()));
      return allowed;
    }
  }
  if (policy.leader == LeaderPolicy::kAnywhere || leadership_->IsLeader()) {
    return Admission::kServe;
  }
  if (policy.leader == LeaderPolicy::kLeaderOrAnswer) {
    return Admission::kAnswerNotLeader;
  }
  return absl::FailedPreconditionError(core::NotLeaderMessage(*leadership_));
}

}  // namespace metasrv::server
