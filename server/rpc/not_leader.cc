#include "server/rpc/not_leader.h"

#include "server/ops/log_limit.h"

namespace metasrv::server {

void SetNotLeader(const core::Leadership& leadership,
                  greptime::v1::meta::ResponseHeader* header) {
  header->set_protocol_version(1);
  auto* error = header->mutable_error();
  error->set_code(core::kNotLeaderErrorCode);
  error->set_err_msg(core::kNotLeaderText);
  LogLimited(spdlog::level::debug, "not_leader_answer", "",
             "answered not leader: {}", core::NotLeaderMessage(leadership));
}

}  // namespace metasrv::server
