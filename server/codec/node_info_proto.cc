#include "server/codec/node_info_proto.h"

#include <cstdint>
#include <cstdlib>
#include <string>

namespace metasrv::server {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using greptime::v1::meta::NodeInfo;

// The protobuf field of each core field, looked up by name once.
const FieldDescriptor* Field(const char* name) {
  const FieldDescriptor* field = NodeInfo::descriptor()->FindFieldByName(name);
  // A name without a field is a programming error that every test hits.
  if (field == nullptr) std::abort();
  return field;
}

void Get(const Message& m, const char* name, std::string* out) {
  *out = m.GetReflection()->GetString(m, Field(name));
}
void Get(const Message& m, const char* name, int64_t* out) {
  *out = m.GetReflection()->GetInt64(m, Field(name));
}
void Get(const Message& m, const char* name, uint64_t* out) {
  *out = m.GetReflection()->GetUInt64(m, Field(name));
}
void Set(Message* m, const char* name, const std::string& value) {
  m->GetReflection()->SetString(m, Field(name), value);
}
void Set(Message* m, const char* name, int64_t value) {
  m->GetReflection()->SetInt64(m, Field(name), value);
}
void Set(Message* m, const char* name, uint64_t value) {
  m->GetReflection()->SetUInt64(m, Field(name), value);
}

}  // namespace

core::NodeInfo FromProto(const NodeInfo& proto) {
  core::NodeInfo info;
  core::ForEachNodeInfoField(
      [&proto](const char* name, auto& field) { Get(proto, name, &field); },
      info);
  return info;
}

void ToProto(const core::NodeInfo& info, NodeInfo* proto) {
  core::ForEachNodeInfoField(
      [proto](const char* name, const auto& field) { Set(proto, name, field); },
      info);
}

}  // namespace metasrv::server
