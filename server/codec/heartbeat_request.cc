#include "server/codec/heartbeat_request.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "server/codec/flow_stat_wire.h"
#include "server/rpc/request_decoder.h"

namespace metasrv::server {
namespace {

google::protobuf::ArenaOptions FirstBlock(char* block, size_t size) {
  google::protobuf::ArenaOptions options;
  options.initial_block = block;
  options.initial_block_size = size;
  return options;
}

// Fields of flow_stat entries a reader keeps room for between requests.
constexpr size_t kKeepFlowFields = 4096;

absl::Status Malformed() {
  return absl::InvalidArgumentError(
      absl::StrCat("malformed HeartbeatRequest: the bytes do not parse as ",
                   kHeartbeatRequestType));
}

}  // namespace

HeartbeatRequestReader::HeartbeatRequestReader()
    : arena_(FirstBlock(block_, sizeof(block_))) {
  Fresh();
}

metasrv::v1::HeartbeatFrame* HeartbeatRequestReader::Fresh() {
  arena_.Reset();
  flows_.Truncate(0);
  // A stream that once sent a huge report does not keep its room.
  if (flows_.capacity() > kKeepFlowFields) {
    flows_ = core::FlowStateValue::Builder();
  }
  flow_stat_bytes_ = 0;
  frame_ = google::protobuf::Arena::CreateMessage<metasrv::v1::HeartbeatFrame>(
      &arena_);
  return frame_;
}

absl::Status HeartbeatRequestReader::DecodeFlows(absl::Status parsed) {
  if (!parsed.ok()) return parsed;
  for (const std::string& stat : frame_->flow_stat()) {
    flow_stat_bytes_ += stat.size();
    if (!DecodeFlowStat(stat, &flows_)) return Malformed();
  }
  return absl::OkStatus();
}

absl::Status HeartbeatRequestReader::Read(grpc_byte_buffer* raw,
                                          size_t max_bytes) {
  return DecodeFlows(
      DecodeRequest(raw, max_bytes, Fresh(), kHeartbeatRequestType));
}

absl::Status HeartbeatRequestReader::Read(grpc::ByteBuffer* raw,
                                          size_t max_bytes) {
  return DecodeFlows(
      DecodeRequest(raw, max_bytes, Fresh(), kHeartbeatRequestType));
}

absl::Status HeartbeatRequestReader::Read(
    const greptime::v1::meta::HeartbeatRequest& request) {
  return Read(request.SerializeAsString());
}

absl::Status HeartbeatRequestReader::Read(absl::string_view bytes) {
  metasrv::v1::HeartbeatFrame* frame = Fresh();
  const bool parsed =
      frame->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  return DecodeFlows(parsed ? absl::OkStatus() : Malformed());
}

}  // namespace metasrv::server
