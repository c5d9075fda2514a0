#include "core/flownode_record.h"

namespace metasrv::core {

bool NodeInfo::operator==(const NodeInfo& o) const {
  bool equal = true;
  ForEachNodeInfoField([&equal](const char*, const auto& a,
                                const auto& b) { equal = equal && a == b; },
                       *this, o);
  return equal;
}

bool FlownodeRecord::operator==(const FlownodeRecord& o) const {
  return peer_addr == o.peer_addr && last_heartbeat_ms == o.last_heartbeat_ms &&
         last_report_ms == o.last_report_ms && info == o.info;
}

}  // namespace metasrv::core
