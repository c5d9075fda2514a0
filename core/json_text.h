// JSON text as serde_json writes it, for the values GreptimeDB's own code
// reads back with serde (cluster info, metasrv node info).
#ifndef METASRV_CORE_JSON_TEXT_H_
#define METASRV_CORE_JSON_TEXT_H_

#include <string>

#include "absl/strings/string_view.h"
#include "core/flownode_record.h"

namespace metasrv::core {

// Appends `value` as serde_json writes a string: the quote, the backslash
// and the control characters below 0x20 escaped (the short forms where JSON
// has them, else \u00xx in lowercase hex); every other byte as it is.
void AppendSerdeString(absl::string_view value, std::string* out);

// Appends `,"version":…` through `"hostname":…`: the members of `info` in
// the order upstream's NodeInfo and MetasrvNodeInfo both declare them.
void AppendSerdeNodeInfoMembers(const NodeInfo& info, std::string* out);

}  // namespace metasrv::core

#endif  // METASRV_CORE_JSON_TEXT_H_
