#include "server/codec/node_info_proto.h"

namespace metasrv::server {

using greptime::v1::meta::NodeInfo;

core::NodeInfo FromProto(const NodeInfo& proto) {
  core::NodeInfo info;
  info.version = proto.version();
  info.git_commit = proto.git_commit();
  info.start_time_ms = proto.start_time_ms();
  info.hostname = proto.hostname();
  info.total_cpu_millicores = proto.total_cpu_millicores();
  info.total_memory_bytes = proto.total_memory_bytes();
  info.cpu_usage_millicores = proto.cpu_usage_millicores();
  info.memory_usage_bytes = proto.memory_usage_bytes();
  return info;
}

void ToProto(const core::NodeInfo& info, NodeInfo* proto) {
  proto->set_version(info.version);
  proto->set_git_commit(info.git_commit);
  proto->set_start_time_ms(info.start_time_ms);
  proto->set_hostname(info.hostname);
  proto->set_total_cpu_millicores(info.total_cpu_millicores);
  proto->set_total_memory_bytes(info.total_memory_bytes);
  proto->set_cpu_usage_millicores(info.cpu_usage_millicores);
  proto->set_memory_usage_bytes(info.memory_usage_bytes);
}

}  // namespace metasrv::server
