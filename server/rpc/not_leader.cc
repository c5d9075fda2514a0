#include "server/rpc/not_leader.h"

namespace metasrv::server {

void SetNotLeader(const core::Leadership& leadership,
                  greptime::v1::meta::ResponseHeader* header) {
  header->set_protocol_version(1);
  auto* error = header->mutable_error();
  error->set_code(core::kNotLeaderErrorCode);
  error->set_err_msg(core::NotLeaderMessage(leadership));
}

}  // namespace metasrv::server
