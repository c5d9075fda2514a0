// Every read of the manager is one instant: the state after some whole
// number of merges, never part of one. Writers send reports whose flows lie
// in many chunks, every flow of a report carrying the report's number;
// readers of every path check that each node's flows they got carry one
// number, and that the aggregate matches the node reports of the same read.
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/flow_change_tracker.h"
#include "core/flow_state_codec.h"
#include "core/flow_state_keys.h"
#include "core/flow_state_manager.h"
#include "gtest/gtest.h"

namespace metasrv::core {
namespace {

constexpr int kNodes = 2;
constexpr uint32_t kChunks = 24;  // Flows per report, one per chunk.

// Node n's flows: one in each of kChunks chunks, disjoint between nodes.
uint32_t FlowOf(int node, uint32_t chunk) { return chunk * 1024 + node; }
int NodeOf(uint32_t flow_id) { return static_cast<int>(flow_id % 1024); }

// Report `number` of a node: every flow's size and time are the number. Odd
// numbers leave out the last chunk's flow, so flows also come and go.
FlowStateValue NumberedReport(int node, int64_t number) {
  FlowStateValue::Builder b;
  const uint32_t chunks = number % 2 == 1 ? kChunks - 1 : kChunks;
  for (uint32_t c = 0; c < chunks; ++c) {
    b.SetStateSize(FlowOf(node, c), static_cast<uint64_t>(number))
        .SetLastExecTime(FlowOf(node, c), number);
  }
  return b.Build();
}

// Per node, the one report number its flows carry; "" when they agree,
// else what is wrong.
std::string OneNumberPerNode(const std::vector<FlowStat>& flows,
                             std::map<int, int64_t>* numbers) {
  std::map<int, int> counts;
  for (const FlowStat& f : flows) {
    const int node = NodeOf(f.flow_id);
    const int64_t n = f.last_exec_time;
    if (static_cast<int64_t>(f.state_size) != n) {
      return absl::StrCat("flow ", f.flow_id, ": size ", f.state_size, " time ",
                          n);
    }
    auto [it, fresh] = numbers->emplace(node, n);
    if (!fresh && it->second != n) {
      return absl::StrCat("node ", node, ": reports ", it->second, " and ", n,
                          " in one read");
    }
    ++counts[node];
  }
  for (const auto& [node, count] : counts) {
    const int64_t n = (*numbers)[node];
    const int expected = n % 2 == 1 ? kChunks - 1 : kChunks;
    if (count != expected) {
      return absl::StrCat("node ", node, ": ", count, " flows of report ", n);
    }
  }
  return "";
}

std::string CheckJson(const std::string& json,
                      std::map<int, int64_t>* numbers) {
  absl::StatusOr<FlowStateValue> value = DecodeFlowState(json);
  if (!value.ok()) return std::string(value.status().message());
  return OneNumberPerNode(value->flows(), numbers);
}

std::vector<FlowStat> Stats(const std::vector<AggregateFlow>& flows) {
  std::vector<FlowStat> out;
  for (const AggregateFlow& f : flows) out.push_back(f.stat);
  return out;
}

// The aggregate and the node reports of one KV read: each consistent, and
// the aggregate's numbers those of the reports.
std::string CheckKv(const std::vector<kv::KeyValue>& kvs) {
  std::map<int, int64_t> aggregate, reports;
  bool saw_aggregate = false;
  for (const kv::KeyValue& kv : kvs) {
    if (kv.key == kFlowStateKey) {
      saw_aggregate = true;
      if (std::string e = CheckJson(kv.value, &aggregate); !e.empty())
        return "aggregate: " + e;
    } else if (std::optional<uint64_t> node = ParseFlowStateNodeKey(kv.key)) {
      std::map<int, int64_t> one;
      if (std::string e = CheckJson(kv.value, &one); !e.empty())
        return kv.key + ": " + e;
      reports.insert(one.begin(), one.end());
    }
  }
  if (saw_aggregate && aggregate != reports) {
    std::string out = "aggregate and reports differ:";
    for (auto [n, k] : aggregate) absl::StrAppend(&out, " agg ", n, "=", k);
    for (auto [n, k] : reports) absl::StrAppend(&out, " node ", n, "=", k);
    return out;
  }
  return "";
}

TEST(FlowStateManagerInstantTest, EveryReadPathSeesWholeMerges) {
  FlowStateManager manager;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int node = 0; node < kNodes; ++node) {
    threads.emplace_back([&, node] {
      for (int64_t k = 1; !stop.load(); ++k) {
        ASSERT_TRUE(manager.Merge(node, NumberedReport(node, k)).ok());
      }
    });
  }
  // Until every read path has read at least this often with merges between.
  constexpr int kReads = 400;
  std::atomic<int> failures{0};
  auto reader = [&](const char* name, auto read_once) {
    return std::thread([&, name, read_once]() mutable {
      const absl::Time deadline = absl::Now() + absl::Seconds(60);
      for (int i = 0; i < kReads && absl::Now() < deadline; ++i) {
        std::string error = read_once();
        if (!error.empty()) {
          ++failures;
          ADD_FAILURE() << name << ", read " << i << ": " << error;
          return;
        }
      }
    });
  };
  threads.push_back(reader("Range", [&] {
    kv::RangeRequest req;
    req.key = std::string(kFlowStateKey);
    req.range_end = req.key + "0";  // "__flow/state" and "__flow/state/...".
    absl::StatusOr<kv::RangeResponse> got = manager.Range(req);
    return got.ok() ? CheckKv(got->kvs) : got.status().ToString();
  }));
  threads.push_back(reader("BatchGet", [&] {
    absl::StatusOr<std::vector<kv::KeyValue>> got = manager.BatchGet(
        {FlowStateNodeKey(0), std::string(kFlowStateKey), FlowStateNodeKey(1)});
    return got.ok() ? CheckKv(*got) : got.status().ToString();
  }));
  threads.push_back(reader("EncodeChunks", [&] {
    auto chunks = manager.EncodeChunks(ChunkEncoding::kJson,
                                       &FlowAggregate::EncodeJsonChunk);
    std::map<int, int64_t> numbers;
    return chunks.has_value()
               ? CheckJson(FlowAggregate::AssembleJson(*chunks), &numbers)
               : "";
  }));
  // The cached chunks alone (GetFlowState's path on a gRPC thread): encoded
  // by the reader itself, then read back from the cache when no merge came
  // between; each such answer is one instant too. Counts its hits.
  std::atomic<int> cached_hits{0};
  threads.push_back(reader("CachedChunks", [&] {
    manager.EncodeChunks(ChunkEncoding::kJson, &FlowAggregate::EncodeJsonChunk);
    std::optional<std::vector<std::shared_ptr<const std::string>>> chunks;
    if (!manager.CachedChunks(ChunkEncoding::kJson, &chunks)) {
      return std::string();
    }
    ++cached_hits;
    std::map<int, int64_t> numbers;
    return chunks.has_value()
               ? CheckJson(FlowAggregate::AssembleJson(*chunks), &numbers)
               : "";
  }));
  threads.push_back(reader("Read(all)", [&] {
    std::map<int, int64_t> numbers;
    return OneNumberPerNode(
        Stats(manager.Read({}).value_or(std::vector<AggregateFlow>{})),
        &numbers);
  }));
  threads.push_back(reader("Read(some)", [&] {
    std::vector<uint32_t> ids;
    for (uint32_t c = 0; c < kChunks; ++c) ids.push_back(FlowOf(1, c));
    std::map<int, int64_t> numbers;
    return OneNumberPerNode(
        Stats(manager.Read(ids).value_or(std::vector<AggregateFlow>{})),
        &numbers);
  }));
  threads.push_back(reader("ListFlownodes", [&] {
    for (const FlownodeView& node : manager.ListFlownodes({})) {
      if (node.flow_count != kChunks && node.flow_count != kChunks - 1) {
        return absl::StrCat("node ", node.node_id, " has ", node.flow_count,
                            " flows");
      }
    }
    return std::string();
  }));
  // The watch: the whole state of each update, and the state the deltas
  // build, are each one instant.
  threads.emplace_back([&] {
    auto text = [](absl::Span<const AggregateFlow> flows) {
      std::string out;
      for (const AggregateFlow& f : flows) {
        absl::StrAppend(&out, f.stat.flow_id, "=", f.stat.last_exec_time, ";");
      }
      return out;
    };
    FlowChangeTracker tracker(ChunkEncoding::kReaderSlot1, +text,
                              manager.term());
    std::map<uint32_t, FlowStat> applied;
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    for (int i = 0; i < kReads && absl::Now() < deadline; ++i) {
      const FlowChangeTracker::Update update = tracker.Advance(manager);
      for (uint32_t id : update.removed) applied.erase(id);
      for (const AggregateFlow& f : update.changed)
        applied[f.stat.flow_id] = f.stat;
      std::vector<FlowStat> flows;
      for (const auto& [id, stat] : applied) flows.push_back(stat);
      std::map<int, int64_t> numbers;
      std::string error = OneNumberPerNode(flows, &numbers);
      std::string whole;
      for (const auto& chunk : update.chunks) whole += *chunk;
      std::string built;
      for (const FlowStat& f : flows) {
        absl::StrAppend(&built, f.flow_id, "=", f.last_exec_time, ";");
      }
      if (error.empty() && whole != built) error = "whole state != deltas";
      if (!error.empty()) {
        ++failures;
        ADD_FAILURE() << "watch, update " << i << ": " << error;
        break;
      }
    }
  });
  for (size_t i = kNodes; i < threads.size(); ++i) threads[i].join();
  stop = true;
  for (int i = 0; i < kNodes; ++i) threads[i].join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(cached_hits.load(), 0) << "the cached path was never taken";
}

}  // namespace
}  // namespace metasrv::core
