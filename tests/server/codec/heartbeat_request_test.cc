// The server reads heartbeat requests without protobuf maps (flow_stat_wire,
// heartbeat_request): these check that it accepts exactly what protobuf's
// parse of a HeartbeatRequest accepts, and reads the same flows, for the
// encodings clients write, for every odd encoding the wire format allows,
// and for many thousands of corruptions of real requests.
#include "server/codec/heartbeat_request.h"

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"
#include "server/codec/flow_stat_wire.h"

namespace metasrv::server {
namespace {

namespace meta = greptime::v1::meta;

// protobuf's own reading of `bytes`: nullopt if it refuses them, else the
// flows of flow_stat's two maps.
std::optional<core::FlowStateValue> ByProtobuf(const std::string& bytes,
                                               bool* has_flow_stat) {
  meta::HeartbeatRequest request;
  if (!request.ParseFromString(bytes)) return std::nullopt;
  core::FlowStateValue::Builder builder;
  for (const auto& [id, size] : request.flow_stat().flow_stat_size()) {
    builder.SetStateSize(id, size);
  }
  for (const auto& [id, ms] : request.flow_stat().flow_last_exec_time_map()) {
    builder.SetLastExecTime(id, ms);
  }
  *has_flow_stat = request.has_flow_stat();
  return builder.Build();
}

// The reader's, in the same terms.
std::optional<core::FlowStateValue> ByReader(const std::string& bytes,
                                             bool* has_flow_stat) {
  HeartbeatRequestReader reader;
  if (!reader.Read(bytes).ok()) return std::nullopt;
  *has_flow_stat = reader.has_flow_stat();
  return reader.flows()->Build();
}

// Both read `bytes` alike; returns whether protobuf accepted them.
bool ExpectSameReading(const std::string& bytes) {
  bool pb_stat = false;
  bool our_stat = false;
  std::optional<core::FlowStateValue> pb = ByProtobuf(bytes, &pb_stat);
  std::optional<core::FlowStateValue> ours = ByReader(bytes, &our_stat);
  EXPECT_EQ(pb.has_value(), ours.has_value())
      << "protobuf " << (pb ? "accepts" : "refuses") << " what the reader "
      << (ours ? "accepts" : "refuses");
  if (pb.has_value() && ours.has_value()) {
    EXPECT_TRUE(*pb == *ours);
    EXPECT_EQ(pb_stat, our_stat);
  }
  return pb.has_value();
}

std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

// A request whose flow_stat field (9) holds `stat` as its bytes.
std::string WithFlowStat(const std::string& stat) {
  meta::HeartbeatRequest base;
  base.mutable_header()->set_role(meta::FLOWNODE);
  base.mutable_header()->set_member_id(3);
  return base.SerializeAsString() + "\x4a" + Varint(stat.size()) + stat;
}

// A map entry of field `field` (1 or 2) with payload `entry`.
std::string Entry(int field, const std::string& entry) {
  return std::string(1, static_cast<char>(field << 3 | 2)) +
         Varint(entry.size()) + entry;
}

TEST(HeartbeatRequestReaderTest, ReadsWhatClientsWrite) {
  meta::HeartbeatRequest request;
  request.mutable_header()->set_role(meta::FLOWNODE);
  request.mutable_header()->set_member_id(42);
  request.mutable_peer()->set_addr("10.0.0.1:4004");
  auto* stat = request.mutable_flow_stat();
  for (uint32_t id : {0u, 1u, 127u, 128u, 300u, 4294967295u}) {
    (*stat->mutable_flow_stat_size())[id] = id * 1000ull;
    (*stat->mutable_flow_last_exec_time_map())[id] = -static_cast<int64_t>(id);
  }
  const std::string bytes = request.SerializeAsString();
  EXPECT_TRUE(ExpectSameReading(bytes));
  HeartbeatRequestReader reader;
  ASSERT_TRUE(reader.Read(bytes).ok());
  EXPECT_EQ(reader.request().header().member_id(), 42u);
  EXPECT_EQ(reader.request().peer().addr(), "10.0.0.1:4004");
  EXPECT_EQ(reader.flow_stat_bytes(), stat->ByteSizeLong());
  core::FlowStateValue flows = reader.flows()->Build();
  ASSERT_EQ(flows.flows().size(), 6u);
  EXPECT_EQ(flows.Find(300)->state_size, 300000u);
  EXPECT_EQ(flows.Find(4294967295u)->last_exec_time, -4294967295ll);
}

TEST(HeartbeatRequestReaderTest, OddEncodingsReadAsProtobufReadsThem) {
  const std::vector<std::string> stats = {
      "",                                    // Empty FlowStat.
      Entry(1, ""),                          // Entry without key/value.
      Entry(1, "\x08\x05"),                  // Key only.
      Entry(2, "\x10\x05"),                  // Value only.
      Entry(1, "\x10\x07\x08\x02"),          // Value before key.
      Entry(1, "\x08\x01\x08\x02\x10\x03"),  // Key twice: last wins.
      Entry(1, "\x08\x01\x10\x0a") + Entry(1, "\x08\x01\x10\x14"),  // Dup.
      Entry(1, "\x08\x80\x00\x10\x01"),              // Non-minimal varint key.
      Entry(1, "\x08\xff\xff\xff\xff\x7f\x10\x01"),  // Key past 32 bits.
      Entry(2, "\x08\x01\x10" +
                   std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10)),
      Entry(2, "\x08\x01\x10" +
                   std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00", 10)),
      Entry(2, "\x08\x01\x10" +
                   std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 10)),
      Entry(2, "\x08\x01\x10" +
                   std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x80\x01",
                               11)),
      Entry(1, "\x08\x01\x18\x09\x10\x02"),       // Unknown varint in entry.
      Entry(1, "\x0d\x01\x00\x00\x00\x10\x02"),   // Key as fixed32: unknown.
      Entry(1, "\x08\x01\x10"),                   // Truncated value.
      "\x18\x05" + Entry(1, "\x08\x01\x10\x02"),  // Unknown varint field.
      "\x22\x02\x01\x02" + Entry(1, "\x08\x01\x10\x02"),  // Unknown LEN.
      "\x29" + std::string(8, '\x01') + Entry(1, "\x08\x01\x10\x02"),  // I64.
      "\x2d" + std::string(4, '\x01') + Entry(1, "\x08\x01\x10\x02"),  // I32.
      "\x2b\x08\x01\x2c" + Entry(1, "\x08\x01\x10\x02"),  // Group field 5.
      "\x2b\x08\x01",                                     // Unterminated group.
      "\x2c",                                             // Stray end group.
      "\x08\x05" + Entry(1, "\x08\x01\x10\x02"),       // Field 1 as a varint.
      "\x82\x01\x00" + Entry(1, "\x08\x01\x10\x02"),   // Two-byte tag.
      "\x00",                                          // Tag 0.
      "\x0e",                                          // Wire type 6.
      "\x0a\x85\x80\x80\x80\x00\x08\x01\x10\x02",      // Five-byte length.
      "\x0a\x85\x80\x80\x80\x80\x00\x08\x01\x10\x02",  // Six-byte length.
      "\x0a\x05\x08\x01",                              // Length past the end.
  };
  int accepted = 0;
  for (const std::string& stat : stats) {
    SCOPED_TRACE(::testing::PrintToString(stat));
    accepted += ExpectSameReading(WithFlowStat(stat));
  }
  // Both kinds occur: the list tries acceptance and refusal.
  EXPECT_GT(accepted, 10);
  EXPECT_LT(accepted, static_cast<int>(stats.size()));
  // Two flow_stat fields merge: their maps are one, the later entry wins.
  EXPECT_TRUE(ExpectSameReading(WithFlowStat(Entry(1, "\x08\x01\x10\x0a") +
                                             Entry(2, "\x08\x02\x10\x01")) +
                                "\x4a\x04" + Entry(1, "\x08\x01")));
}

// Corruptions of real requests: bytes flipped, dropped, inserted, repeated.
TEST(HeartbeatRequestReaderTest, CorruptedRequestsReadAsProtobufReadsThem) {
  std::mt19937_64 rng(20261202);
  auto pick = [&rng](uint64_t n) { return rng() % n; };
  const char kTricky[] = {'\x00', '\x08', '\x0a', '\x10', '\x12', '\x4a',
                          '\x7f', '\x80', '\xff', '\x2b', '\x2c', '\x01'};
  int accepted = 0;
  int refused = 0;
  google::protobuf::LogSilencer quiet;  // Invalid UTF-8 is logged as refused.
  for (int i = 0; i < 20000; ++i) {
    meta::HeartbeatRequest request;
    request.mutable_header()->set_role(meta::FLOWNODE);
    request.mutable_header()->set_member_id(pick(1000));
    const int flows = static_cast<int>(pick(6));
    for (int f = 0; f < flows; ++f) {
      const uint32_t id = static_cast<uint32_t>(pick(2) ? pick(200) : rng());
      (*request.mutable_flow_stat()->mutable_flow_stat_size())[id] =
          rng() >> pick(64);
      if (pick(2)) {
        (*request.mutable_flow_stat()->mutable_flow_last_exec_time_map())[id] =
            static_cast<int64_t>(rng() >> pick(64)) * (pick(2) ? 1 : -1);
      }
    }
    std::string bytes = request.SerializeAsString();
    const int edits = 1 + static_cast<int>(pick(3));
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      const size_t at = pick(bytes.size());
      switch (pick(4)) {
        case 0:
          bytes[at] = static_cast<char>(pick(2) ? kTricky[pick(sizeof(kTricky))]
                                                : static_cast<char>(rng()));
          break;
        case 1:
          bytes.erase(at, 1 + pick(3));
          break;
        case 2:
          bytes.insert(at, 1, kTricky[pick(sizeof(kTricky))]);
          break;
        default:
          bytes.insert(at, bytes.substr(at, 1 + pick(8)));
          break;
      }
    }
    SCOPED_TRACE(::testing::PrintToString(bytes));
    (ExpectSameReading(bytes) ? accepted : refused)++;
    if (::testing::Test::HasFailure()) break;
  }
  // Both outcomes well covered. (The split moves from run to run by a few
  // percent: protobuf's map order, so the bytes corrupted, is per process.)
  EXPECT_GT(accepted, 500);
  EXPECT_GT(refused, 500);
}

TEST(HeartbeatRequestReaderTest, AMalformedFlowStatIsAMalformedRequest) {
  HeartbeatRequestReader reader;
  absl::Status s = reader.Read(WithFlowStat("\x0a\x05\x08\x01"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "malformed HeartbeatRequest: the bytes do not parse as "
            "greptime.v1.meta.HeartbeatRequest");
  // The next request is read afresh.
  ASSERT_TRUE(reader.Read(WithFlowStat(Entry(1, "\x08\x07\x10\x08"))).ok());
  core::FlowStateValue flows = reader.flows()->Build();
  ASSERT_EQ(flows.flows().size(), 1u);
  EXPECT_EQ(flows.Find(7)->state_size, 8u);
}


// The frame reads node_workloads (fields 10-12) and the "__env_vars"
// extension, and the node's cluster info carries them.
TEST(HeartbeatRequestReaderTest, TheClusterInfoCarriesWorkloadsAndEnvVars) {
  meta::HeartbeatRequest request;
  request.mutable_header()->set_role(meta::FLOWNODE);
  request.mutable_peer()->set_id(7);
  request.mutable_info()->set_version("v1");
  request.mutable_flownode()->add_types(3);
  request.mutable_flownode()->add_types(1);
  (*request.mutable_extensions())["__env_vars"] = R"({"vars":{"K":"V"}})";
  HeartbeatRequestReader reader;
  ASSERT_TRUE(reader.Read(request).ok());
  ASSERT_TRUE(reader.Check().ok());
  ReportRefusal why = ReportRefusal::kNone;
  absl::StatusOr<core::NodeHeartbeat> heartbeat =
      reader.TakeHeartbeat(7, 100, &why);
  ASSERT_TRUE(heartbeat.ok());
  ASSERT_TRUE(heartbeat->cluster_node.has_value());
  EXPECT_EQ(heartbeat->cluster_node->workloads,
            (std::vector<int32_t>{3, 1}));
  EXPECT_EQ(heartbeat->cluster_node->env_vars,
            (std::vector<std::pair<std::string, std::string>>{{"K", "V"}}));
}

TEST(HeartbeatRequestReaderTest, WorkloadTypesAreBounded) {
  meta::HeartbeatRequest request;
  request.mutable_header()->set_role(meta::FRONTEND);
  for (int i = 0; i < kMaxWorkloadTypes; ++i) {
    request.mutable_datanode()->add_types(i);
  }
  HeartbeatRequestReader reader;
  ASSERT_TRUE(reader.Read(request).ok());
  EXPECT_TRUE(reader.Check().ok());
  request.mutable_datanode()->add_types(0);
  ASSERT_TRUE(reader.Read(request).ok());
  absl::Status checked = reader.Check();
  EXPECT_EQ(checked.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(checked.message(),
            "heartbeat request has 65 workload types, more than the limit of "
            "64");
}

}  // namespace
}  // namespace metasrv::server
