#include "core/json_text.h"

#include "absl/strings/str_cat.h"

namespace metasrv::core {

void AppendSerdeString(absl::string_view value, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (const char ch : value) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xF]);
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

void AppendSerdeNodeInfoMembers(const NodeInfo& info, std::string* out) {
  out->append(R"(,"version":)");
  AppendSerdeString(info.version, out);
  out->append(R"(,"git_commit":)");
  AppendSerdeString(info.git_commit, out);
  absl::StrAppend(out, R"(,"start_time_ms":)", info.start_time_ms,
                  R"(,"total_cpu_millicores":)", info.total_cpu_millicores,
                  R"(,"total_memory_bytes":)", info.total_memory_bytes,
                  R"(,"cpu_usage_millicores":)", info.cpu_usage_millicores,
                  R"(,"memory_usage_bytes":)", info.memory_usage_bytes,
                  R"(,"hostname":)");
  AppendSerdeString(info.hostname, out);
}

}  // namespace metasrv::core
