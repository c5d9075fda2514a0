// libFuzzer target: the heartbeat path. The input is a script of steps; each
// step is a HeartbeatRequest (arbitrary bytes, as they come off the wire) run
// through the server's own reader and HeartbeatHandler against a real
// manager, or a reset. The reader must accept exactly what protobuf's parse
// of a HeartbeatRequest accepts and read the same flows from it; after every
// step the aggregate must equal a brute-force recomputation from the
// per-node keys.
//
// Step encoding: one byte `op`; op % 8 == 0 resets the state; otherwise two
// bytes of length L follow, then L bytes of the request.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "absl/synchronization/mutex.h"
#include "core/flow_state_manager.h"
#include "core/leadership.h"
#include "greptime/v1/meta/heartbeat.pb.h"
#include "server/codec/heartbeat_request.h"
#include "server/services/heartbeat_handler.h"
#include "tests/core/brute_force.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool init = [] {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    return true;
  }();
  (void)init;
  metasrv::core::FlowStateManager manager;
  metasrv::core::StandaloneLeadership leadership("127.0.0.1:3002");
  metasrv::server::HeartbeatHandler::Options options;
  options.max_flows_per_report = 64;
  metasrv::server::HeartbeatHandler handler(&manager, &leadership, options);
  bool first = true;
  size_t pos = 0;
  while (pos < size) {
    const uint8_t op = data[pos++];
    if (op % 8 == 0) {
      manager.Reset();
    } else {
      if (pos + 2 > size) break;
      size_t len = static_cast<size_t>(data[pos]) |
                   (static_cast<size_t>(data[pos + 1]) << 8);
      pos += 2;
      if (len > size - pos) len = size - pos;
      greptime::v1::meta::HeartbeatRequest request;
      const bool parsed =
          request.ParseFromArray(data + pos, static_cast<int>(len));
      static metasrv::server::HeartbeatRequestReader reader;
      const bool read = reader
                            .Read(absl::string_view(
                                reinterpret_cast<const char*>(data + pos), len))
                            .ok();
      if (parsed != read) {
        std::fprintf(stderr, "protobuf %s the request, the reader %s it\n",
                     parsed ? "parses" : "refuses", read ? "reads" : "refuses");
        std::abort();
      }
      if (read) {
        // The reader's flows are the maps' entries.
        metasrv::core::FlowStateValue::Builder expected;
        for (const auto& [id, size] : request.flow_stat().flow_stat_size())
          expected.SetStateSize(id, size);
        for (const auto& [id, ms] :
             request.flow_stat().flow_last_exec_time_map())
          expected.SetLastExecTime(id, ms);
        metasrv::server::HeartbeatRequestReader again;
        (void)again.Read(
            absl::string_view(reinterpret_cast<const char*>(data + pos), len));
        if (again.flows()->Build() != expected.Build() ||
            again.has_flow_stat() != request.has_flow_stat()) {
          std::fprintf(stderr, "the reader's flows differ from protobuf's\n");
          std::abort();
        }
        greptime::v1::meta::HeartbeatResponse response;
        // Any status is fine (bad header, unknown role, too many flows); what
        // matters is that the state stays consistent.
        auto whole = reader.Parse(handler.max_flows_per_report());
        if (whole.ok()) {
          handler
              .Handle(*std::move(whole), first,
                      *metasrv::server::AdmitLeader(
                          metasrv::server::Method::kHeartbeat, leadership),
                      &response)
              .IgnoreError();
        }
        first = false;
      }
      pos += len;
    }
    const std::string problem = metasrv::testing::CheckAggregate(manager);
    if (!problem.empty()) {
      std::fprintf(stderr, "%s\n", problem.c_str());
      std::abort();
    }
  }
  return 0;
}
