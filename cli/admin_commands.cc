// The admin commands: reset (LeaderChange) and forget (ForgetFlows,
// ForgetNodes). Each sends the token of --token_file when given.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "cli/commands.h"
#include "metasrv/v1/metasrv.grpc.pb.h"

namespace metasrvctl {
namespace {

// Adds the admin token of --token_file, if given; false (after saying why)
// if it cannot be read.
bool AddToken(const Flags& f, const char* command, grpc::ClientContext* ctx) {
  auto it = f.values.find("token_file");
  if (it == f.values.end()) return true;
  bool ok = false;
  const std::string token(
      absl::StripAsciiWhitespace(ReadFile(it->second, &ok)));
  if (!ok || token.empty()) {
    std::fprintf(stderr, "metasrvctl %s: cannot read a token from %s\n",
                 command, it->second.c_str());
    return false;
  }
  ctx->AddMetadata("authorization", "Bearer " + token);
  return true;
}

// One admin call of `command`: a context with the deadline and the token,
// `call(stub, ctx)` run; its failure said (the token hint knowing whether
// one was sent). kOk, kUsage (no token readable) or kError.
template <typename Call>
int AdminCall(const Client& c, const Flags& f, const char* command, Call call) {
  auto stub = metasrv::v1::Admin::NewStub(c.channel());
  grpc::ClientContext ctx;
  c.Prepare(&ctx);
  if (!AddToken(f, command, &ctx)) return kUsage;
  const grpc::Status s = call(*stub, &ctx);
  return s.ok() ? kOk : Fail(s, f.values.count("token_file") > 0);
}

// `fields` as one JSON object of numbers.
int PrintCounts(const std::vector<std::pair<const char*, uint64_t>>& fields) {
  google::protobuf::Value out;
  auto* object = out.mutable_struct_value()->mutable_fields();
  for (const auto& [name, n] : fields) {
    (*object)[name].set_number_value(static_cast<double>(n));
  }
  return PrintJson(out);
}

// forget --node: ForgetNodes.
int ForgetNodes(const Client& c, const Flags& f,
                const std::vector<uint64_t>& nodes) {
  metasrv::v1::ForgetNodesRequest req;
  for (uint64_t id : nodes) req.add_node_ids(id);
  metasrv::v1::ForgetNodesResponse resp;
  const int code =
      AdminCall(c, f, "forget", [&](auto& stub, grpc::ClientContext* ctx) {
        return stub.ForgetNodes(ctx, req, &resp);
      });
  if (code != kOk) return code;
  if (FlagOn(f, "json")) {
    return PrintCounts({{"forgotten_nodes", resp.forgotten_nodes()}});
  }
  std::printf("%llu flownodes forgotten\n",
              static_cast<unsigned long long>(resp.forgotten_nodes()));
  return kOk;
}

}  // namespace

int Reset(const Client& c, const Flags& f) {
  metasrv::v1::LeaderChangeResponse resp;
  const int code =
      AdminCall(c, f, "reset", [&](auto& stub, grpc::ClientContext* ctx) {
        return stub.LeaderChange(ctx, {}, &resp);
      });
  if (code != kOk) return code;
  if (FlagOn(f, "json")) {
    return PrintCounts({{"dropped_keys", resp.dropped_keys()}});
  }
  std::printf("leader change done; %llu keys dropped\n",
              static_cast<unsigned long long>(resp.dropped_keys()));
  return kOk;
}

int Forget(const Client& c, const Flags& f) {
  std::vector<uint32_t> ids;
  std::vector<uint64_t> nodes;
  if (!ParseFlowIds(f, "forget", &ids)) return kUsage;
  if (!ParseNodeIds(f, "forget", &nodes)) return kUsage;
  if (ids.empty() == nodes.empty()) {
    std::fprintf(stderr,
                 "metasrvctl forget: give --flow=ID,... or --node=ID,...\n");
    return kUsage;
  }
  if (!nodes.empty()) return ForgetNodes(c, f, nodes);
  metasrv::v1::ForgetFlowsRequest req;
  for (uint32_t id : ids) req.add_flow_ids(id);
  metasrv::v1::ForgetFlowsResponse resp;
  const int code =
      AdminCall(c, f, "forget", [&](auto& stub, grpc::ClientContext* ctx) {
        return stub.ForgetFlows(ctx, req, &resp);
      });
  if (code != kOk) return code;
  if (FlagOn(f, "json")) {
    return PrintCounts({{"forgotten_flows", resp.forgotten_flows()},
                        {"updated_nodes", resp.updated_nodes()}});
  }
  std::printf("%llu flows forgotten; %llu node reports rewritten\n",
              static_cast<unsigned long long>(resp.forgotten_flows()),
              static_cast<unsigned long long>(resp.updated_nodes()));
  return kOk;
}

}  // namespace metasrvctl
