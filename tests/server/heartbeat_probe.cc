// A flownode that reports once and then hangs on its open stream, for tests
// that kill a client process mid-stream.
//   heartbeat_probe ADDR NODE_ID FLOW_ID
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <grpcpp/grpcpp.h>

#include "greptime/v1/meta/heartbeat.grpc.pb.h"

namespace meta = greptime::v1::meta;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: heartbeat_probe ADDR NODE_ID FLOW_ID\n");
    return 2;
  }
  const uint64_t node = std::strtoull(argv[2], nullptr, 10);
  const uint32_t flow = static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10));
  auto stub = meta::Heartbeat::NewStub(
      grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  auto stream = stub->Heartbeat(&ctx);
  meta::HeartbeatRequest req;
  req.mutable_header()->set_role(meta::FLOWNODE);
  req.mutable_header()->set_member_id(node);
  meta::HeartbeatResponse resp;
  if (!stream->Write(req) || !stream->Read(&resp)) return 1;
  (*req.mutable_flow_stat()->mutable_flow_stat_size())[flow] = 4242;
  (*req.mutable_flow_stat()->mutable_flow_last_exec_time_map())[flow] = 42;
  if (!stream->Write(req) || !stream->Read(&resp)) return 1;
  std::printf("ready\n");
  std::fflush(stdout);
  while (true) pause();
}
