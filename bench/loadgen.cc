// Load generator: simulates flownodes on heartbeat streams (gRPC callback API,
// no thread per stream), optionally with readers, against a metasrv or the
// echo baseline. Prints one machine-readable line at the end:
//
//   RESULT {"target":...,"msgs_per_s":...,"p50_us":...,"p99_us":...}
//
// Closed loop: every stream sends its next report as soon as the previous
// one is answered. Open loop: every stream sends one report per --interval, at
// fixed phases; latency counts from the scheduled time, so a slow server
// cannot hide its queueing.
#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/proto_buffer_reader.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "greptime/v1/meta/cluster.grpc.pb.h"
#include "greptime/v1/meta/heartbeat.grpc.pb.h"
#include "metasrv/v1/metasrv.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:3002", "server address");
ABSL_FLAG(std::string, label, "metasrv", "name of the target in the result");
ABSL_FLAG(std::string, mode, "closed", "closed or open");
ABSL_FLAG(int, streams, 1000, "concurrent heartbeat streams (flownodes)");
ABSL_FLAG(int, flows, 10, "flows per report");
ABSL_FLAG(int, channels, 8,
          "gRPC channels (TCP connections) to spread streams on");
ABSL_FLAG(absl::Duration, interval, absl::Seconds(3),
          "open loop: period per stream");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(2), "not measured");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(10), "measured");
ABSL_FLAG(int, state_readers, 0, "threads calling GetFlowState");
ABSL_FLAG(bool, state_read_raw, false,
          "state readers take GetFlowState's answer as bytes and only count "
          "its flow ids, without parsing it (the server's part alone: a "
          "frontend's parse runs on its own machine)");
ABSL_FLAG(int, range_readers, 0,
          "threads calling Cluster.Range of __flow/state");
ABSL_FLAG(absl::Duration, reader_interval, absl::Milliseconds(100),
          "pause between one reader's calls");
ABSL_FLAG(int, watchers, 0, "WatchFlowState subscribers (callback reactors)");
ABSL_FLAG(
    bool, watch_stall, false,
    "watchers read their first state, then never read again (slow readers)");
ABSL_FLAG(bool, watch_deltas, false,
          "watchers ask for deltas (changes only after the first state)");
ABSL_FLAG(uint32_t, watch_interval_ms, 0,
          "watchers ask for at most one message per this many ms "
          "(min_interval_ms); 0: the server's --watch_min_interval");
ABSL_FLAG(int, changing_flows, -1,
          "of each report's --flows, how many change from one report to the "
          "next (the others repeat their values); -1: all");
ABSL_FLAG(uint64_t, node_offset, 0, "first node id");
ABSL_FLAG(int, server_pid, 0,
          "a local server's pid: its CPU time over the measured window is "
          "reported (server_cpu_s), read from /proc at the window's ends");
ABSL_FLAG(bool, follow_leader, false,
          "HA: --target lists every replica; streams go to the leader, and a "
          "stream ended by a step-down (ABORTED) reconnects to the new one, "
          "counted as a redirect, not an error");
ABSL_FLAG(bool, gzip, false,
          "send every heartbeat gzip-compressed by gRPC itself (the "
          "compressed flag and grpc-encoding: gzip, as the protocol says); "
          "GreptimeDB's zstd requests, which gRPC C++ cannot send, are sent "
          "by tests/wire/tonic_client.py");
ABSL_FLAG(int, reports, 0,
          "if > 0: each stream sends this many reports, then the "
          "run ends (for memory measurements)");

namespace {

namespace meta = greptime::v1::meta;
using Clock = std::chrono::steady_clock;

// Latency samples in microseconds.
struct Samples {
  std::vector<double> us;
  void Add(Clock::duration d) {
    us.push_back(std::chrono::duration<double, std::micro>(d).count());
  }
};

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * v.size()));
  std::nth_element(v.begin(), v.begin() + i, v.end());
  return v[i];
}

struct Shared {
  Clock::time_point measure_from;  // Start of the measured window.
  Clock::time_point measure_to;    // Its end.
  std::atomic<bool> stopping{false};
  std::atomic<int64_t> errors{0};
  std::atomic<int64_t> late{0};        // Open loop: previous report unanswered.
  std::atomic<int> finished{0};        // Streams done.
  std::atomic<int> ready{0};           // Streams past the handshake.
  bool follow_leader = false;          // See --follow_leader.
  std::atomic<int64_t> redirects{0};   // Streams a step-down ended.
  std::atomic<int64_t> not_leader{0};  // Answers "not leader" (followed).
  std::atomic<int64_t> read_bytes{0};  // Size of the last raw state read.
};

// Counts how a stream or call ended: with --follow_leader a step-down
// (ABORTED, UNAVAILABLE) is a redirect; any other failure but our own
// cancel is an error. Returns whether it was an error.
bool CountEnd(const grpc::Status& status, Shared* shared) {
  const bool step_down = status.error_code() == grpc::StatusCode::ABORTED ||
                         status.error_code() == grpc::StatusCode::UNAVAILABLE;
  if (shared->follow_leader && step_down) {
    shared->redirects.fetch_add(1);
    return false;
  }
  if (status.ok() || status.error_code() == grpc::StatusCode::CANCELLED)
    return false;
  shared->errors.fetch_add(1);
  return true;
}

// A request as bytes: the serialized message (gRPC compresses it when the
// call says so).
grpc::ByteBuffer Encode(const meta::HeartbeatRequest& request) {
  grpc::Slice slice(request.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

class Flownode final
    : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  Flownode(grpc::GenericStub* stub, uint64_t node, int flows, bool closed,
           int reports, bool gzip, Shared* shared)
      : node_(node),
        closed_(closed),
        reports_left_(reports),
        shared_(shared) {
    handshake_.mutable_header()->set_role(meta::FLOWNODE);
    handshake_.mutable_header()->set_member_id(node);
    report_ = handshake_;
    report_.mutable_peer()->set_id(node);
    auto* stat = report_.mutable_flow_stat();
    for (int f = 0; f < flows; ++f) {
      const uint32_t id = static_cast<uint32_t>(node * flows + f);
      (*stat->mutable_flow_stat_size())[id] = 1024;
      (*stat->mutable_flow_last_exec_time_map())[id] = 0;
    }
    if (gzip) context_.set_compression_algorithm(GRPC_COMPRESS_GZIP);
    stub->PrepareBidiStreamingCall(&context_,
                                   "/greptime.v1.meta.Heartbeat/Heartbeat",
                                   grpc::StubOptions(), this);
    StartRead(&response_bytes_);
    writing_ = true;  // The handshake; OnWriteDone clears it.
    write_bytes_ = Encode(handshake_);
    StartWrite(&write_bytes_);
    StartCall();
  }

  // Open loop: a report is due at `when`.
  void Due(Clock::time_point when) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!ready_ || done_ || broken_) return;
    if (outstanding_) {
      shared_->late.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    SendLocked(when);
  }

  void Stop() { context_.TryCancel(); }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {
      broken_ = true;
      return;
    }
    if (want_write_) {
      want_write_ = false;
      writing_ = true;
      write_bytes_ = Encode(report_);
      StartWrite(&write_bytes_);
    }
  }

  void OnReadDone(bool ok) override {
    const Clock::time_point now = Clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    if (!ok) {
      // The stream is ending: OnDone comes once the write in flight (if
      // any) is done, and no operation may start after it.
      broken_ = true;
      return;
    }
    if (!grpc::SerializationTraits<meta::HeartbeatResponse>::Deserialize(
             &response_bytes_, &response_)
             .ok()) {
      shared_->errors.fetch_add(1);
    } else if (response_.header().has_error()) {
      (shared_->follow_leader ? shared_->not_leader : shared_->errors)
          .fetch_add(1);
    }
    if (!ready_) {
      ready_ = true;
      shared_->ready.fetch_add(1);
      StartRead(&response_bytes_);
      return;  // Reports start with the first Due().
    } else {
      outstanding_ = false;
      if (sent_for_ >= shared_->measure_from &&
          sent_for_ < shared_->measure_to) {
        samples_.Add(now - sent_for_);
      }
      if (reports_left_ > 0 && --reports_left_ == 0) {
        done_ = true;
        shared_->finished.fetch_add(1);
      }
    }
    StartRead(&response_bytes_);
    if (closed_ && !done_ && !broken_ &&
        !shared_->stopping.load(std::memory_order_relaxed)) {
      SendLocked(now);
    }
  }

  void OnDone(const grpc::Status& status) override {
    if (CountEnd(status, shared_)) {
      std::fprintf(stderr, "stream %llu ended: %s\n",
                   static_cast<unsigned long long>(node_),
                   status.error_message().c_str());
    }
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
  }

  bool finished() {
    std::lock_guard<std::mutex> lock(mu_);
    return finished_;
  }
  bool ready() {
    std::lock_guard<std::mutex> lock(mu_);
    return ready_;
  }
  Samples TakeSamples() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(samples_);
  }

 private:
  // The report of round `round`: sizes and times change every round.
  void FillReport(int64_t round) {
    auto* stat = report_.mutable_flow_stat();
    const int flows = stat->flow_stat_size_size();
    const int changing = absl::GetFlag(FLAGS_changing_flows);
    // Flow ids are node * flows + f; the first `changing` f of each change.
    auto changes = [&](uint32_t id) {
      return changing < 0 || static_cast<int>(id % flows) < changing;
    };
    for (auto& [id, size] : *stat->mutable_flow_stat_size())
      if (changes(id)) size = 1024 + round % 4096;
    for (auto& [id, t] : *stat->mutable_flow_last_exec_time_map())
      if (changes(id)) t = round;
  }

  void SendLocked(Clock::time_point scheduled) {
    ++round_;
    FillReport(round_);
    outstanding_ = true;
    sent_for_ = scheduled;
    if (writing_) {
      want_write_ = true;
    } else {
      writing_ = true;
      write_bytes_ = Encode(report_);
      StartWrite(&write_bytes_);
    }
  }

  const uint64_t node_;
  const bool closed_;
  int reports_left_;
  Shared* const shared_;
  grpc::ClientContext context_;
  meta::HeartbeatRequest handshake_, report_;
  meta::HeartbeatResponse response_;
  grpc::ByteBuffer write_bytes_, response_bytes_;  // On the wire.
  std::mutex mu_;
  bool ready_ = false, outstanding_ = false, writing_ = false,
       want_write_ = false;
  bool done_ = false, finished_ = false;
  // A read or write failed: the stream is ending, start nothing more.
  bool broken_ = false;
  int64_t round_ = 0;
  Clock::time_point sent_for_;
  Samples samples_;
};

bool CountFlowIds(google::protobuf::io::CodedInputStream* in, uint32_t size,
                  int64_t* flows);

// User plus system CPU time of process `pid` so far, seconds; -1 if unknown.
double ProcessCpuSeconds(int pid) {
  std::FILE* f = std::fopen(absl::StrCat("/proc/", pid, "/stat").c_str(), "r");
  if (f == nullptr) return -1;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = 0;
  // Fields after the command name (which may hold spaces) start past ')'.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return -1;
  std::vector<std::string> fields = absl::StrSplit(p + 2, ' ');
  if (fields.size() < 13) return -1;
  // utime and stime are fields 14 and 15 of the line: 11 and 12 here.
  return (std::stod(fields[11]) + std::stod(fields[12])) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

// GetFlowState of every flow, its answer kept as bytes: the flow ids it
// holds, or -1 on a malformed answer.
int64_t RawGetFlowState(grpc::GenericStub* stub, grpc::ClientContext* ctx,
                        grpc::Status* status, std::atomic<int64_t>* bytes) {
  // An empty GetFlowStateRequest (all flows) is no bytes.
  static const grpc::ByteBuffer* const request = [] {
    grpc::Slice none("");
    return new grpc::ByteBuffer(&none, 1);
  }();
  grpc::ByteBuffer reply;
  std::promise<grpc::Status> done;
  stub->UnaryCall(ctx, "/metasrv.v1.FlowState/GetFlowState",
                  grpc::StubOptions(), request, &reply,
                  [&done](grpc::Status s) { done.set_value(std::move(s)); });
  *status = done.get_future().get();
  if (!status->ok()) return 0;
  bytes->store(static_cast<int64_t>(reply.Length()));
  grpc::ProtoBufferReader reader(&reply);
  google::protobuf::io::CodedInputStream in(&reader);
  int64_t flows = 0;
  return CountFlowIds(&in, static_cast<uint32_t>(reply.Length()), &flows)
             ? flows
             : -1;
}

void Reader(std::shared_ptr<grpc::Channel> channel, bool range, Shared* shared,
            Samples* out, std::atomic<int64_t>* flows_seen) {
  // A frontend runs on another machine; here it shares the CPU with the
  // simulated flownodes, so give it less of it.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 5);
  auto state = metasrv::v1::FlowState::NewStub(channel);
  auto cluster = meta::Cluster::NewStub(channel);
  grpc::GenericStub raw(channel);
  const bool raw_reads = absl::GetFlag(FLAGS_state_read_raw);
  const absl::Duration pause = absl::GetFlag(FLAGS_reader_interval);
  while (!shared->stopping.load()) {
    grpc::ClientContext ctx;
    const Clock::time_point start = Clock::now();
    grpc::Status s;
    int64_t n = 0;
    if (range) {
      meta::RangeRequest req;
      req.mutable_header()->set_role(meta::FRONTEND);
      req.set_key("__flow/state");
      meta::RangeResponse resp;
      s = cluster->Range(&ctx, req, &resp);
      n = resp.kvs_size() > 0 ? static_cast<int64_t>(resp.kvs(0).value().size())
                              : 0;
    } else if (raw_reads) {
      n = RawGetFlowState(&raw, &ctx, &s, &shared->read_bytes);
    } else {
      // As a frontend that parses into an arena (or prost's flat vectors).
      google::protobuf::Arena arena;
      auto* resp = google::protobuf::Arena::CreateMessage<
          metasrv::v1::GetFlowStateResponse>(&arena);
      s = state->GetFlowState(&ctx, {}, resp);
      n = resp->flow_ids_size();
    }
    const Clock::time_point end = Clock::now();
    if (!s.ok()) shared->errors.fetch_add(1);
    if (start >= shared->measure_from && start < shared->measure_to) {
      out->Add(end - start);
      flows_seen->store(n);
    }
    absl::SleepFor(pause);
  }
}

// One WatchFlowState subscriber: counts the states it gets and how old each
// is on arrival (now minus the server's sent_at_ms, same machine clock).
// What a watcher needs of one WatchFlowStateResponse, read from its bytes
// without parsing the state's columns (a remote watcher's parse is not the
// server's cost, and this process shares the machine with the server).
struct WatchHeader {
  uint64_t sequence = 0;
  int64_t sent_at_ms = 0;
  bool delta = false;
  uint64_t base_sequence = 0;
  int64_t flows = 0;  // Entries of state.flow_ids.
};

// Counts the varints of the packed flow_ids (field 2) in a
// GetFlowStateResponse of `size` bytes, skipping every other field.
bool CountFlowIds(google::protobuf::io::CodedInputStream* in, uint32_t size,
                  int64_t* flows) {
  const auto limit = in->PushLimit(static_cast<int>(size));
  while (uint32_t tag = in->ReadTag()) {
    if (tag == (2 << 3 | 2)) {
      uint32_t len = 0;
      if (!in->ReadVarint32(&len)) return false;
      const auto inner = in->PushLimit(static_cast<int>(len));
      uint32_t id = 0;
      while (in->BytesUntilLimit() > 0 && in->ReadVarint32(&id)) ++*flows;
      in->PopLimit(inner);
    } else if (!google::protobuf::internal::WireFormatLite::SkipField(in,
                                                                      tag)) {
      return false;
    }
  }
  in->PopLimit(limit);
  return true;
}

bool ReadWatchHeader(grpc::ByteBuffer* bytes, WatchHeader* out) {
  grpc::ProtoBufferReader reader(bytes);
  google::protobuf::io::CodedInputStream in(&reader);
  while (uint32_t tag = in.ReadTag()) {
    uint64_t v = 0;
    switch (tag) {
      case 1 << 3:
        if (!in.ReadVarint64(&out->sequence)) return false;
        break;
      case 3 << 3:
        if (!in.ReadVarint64(&v)) return false;
        out->sent_at_ms = static_cast<int64_t>(v);
        break;
      case 5 << 3:
        if (!in.ReadVarint64(&v)) return false;
        out->delta = v != 0;
        break;
      case 6 << 3:
        if (!in.ReadVarint64(&out->base_sequence)) return false;
        break;
      case 4 << 3 | 2: {
        uint32_t len = 0;
        if (!in.ReadVarint32(&len) || !CountFlowIds(&in, len, &out->flows))
          return false;
        break;
      }
      default:
        if (!google::protobuf::internal::WireFormatLite::SkipField(&in, tag))
          return false;
    }
  }
  return true;
}

// One WatchFlowState subscriber, reading raw bytes (see WatchHeader).
class Watcher final
    : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  Watcher(grpc::GenericStub* stub, Shared* shared, bool stall, bool deltas,
          uint32_t interval_ms)
      : shared_(shared), stall_(stall) {
    metasrv::v1::WatchFlowStateRequest request;
    request.set_deltas(deltas);
    request.set_min_interval_ms(interval_ms);
    grpc::Slice slice(request.SerializeAsString());
    request_ = grpc::ByteBuffer(&slice, 1);
    stub->PrepareBidiStreamingCall(&ctx_,
                                   "/metasrv.v1.FlowState/WatchFlowState",
                                   grpc::StubOptions(), this);
    StartWrite(&request_);
    StartWritesDone();
    StartRead(&msg_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    WatchHeader h;
    if (!ReadWatchHeader(&msg_, &h)) shared_->errors.fetch_add(1);
    msg_.Clear();
    const Clock::time_point now = Clock::now();
    if (now >= shared_->measure_from && now < shared_->measure_to) {
      const int64_t age_ms = absl::ToUnixMillis(absl::Now()) - h.sent_at_ms;
      std::lock_guard<std::mutex> lock(mu_);
      samples_.us.push_back(static_cast<double>(age_ms) * 1000.0);
      if (h.delta) {
        ++deltas_;
        delta_flows_ += h.flows;
      } else {
        flows_ = h.flows;
      }
    }
    // A delta applies to the message before it, always.
    if (h.delta && h.base_sequence != last_sequence_) {
      shared_->errors.fetch_add(1);
    }
    last_sequence_ = h.sequence;
    if (!stall_) StartRead(&msg_);
  }
  void OnWriteDone(bool) override {}
  void OnDone(const grpc::Status& status) override {
    CountEnd(status, shared_);
    done_.store(true);
  }
  void Stop() { ctx_.TryCancel(); }
  bool finished() const { return done_.load(); }
  Samples TakeSamples() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(samples_);
  }
  int64_t flows() {
    std::lock_guard<std::mutex> lock(mu_);
    return flows_;
  }
  // Deltas received in the window, and the flows they carried.
  std::pair<int64_t, int64_t> deltas() {
    std::lock_guard<std::mutex> lock(mu_);
    return {deltas_, delta_flows_};
  }

 private:
  Shared* const shared_;
  const bool stall_;  // Read one state, then stop reading.
  grpc::ClientContext ctx_;
  grpc::ByteBuffer request_;    // The serialized WatchFlowStateRequest.
  grpc::ByteBuffer msg_;        // Read into; only in callbacks.
  std::mutex mu_;               // Guards the four below.
  Samples samples_;             // Arrival ages, in µs.
  int64_t flows_ = 0;           // Flows in the latest whole state.
  int64_t deltas_ = 0;          // Deltas in the window.
  int64_t delta_flows_ = 0;     // Flows in those deltas.
  uint64_t last_sequence_ = 0;  // Of the previous message; only in callbacks.
  std::atomic<bool> done_{false};
};

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::vector<std::string> targets =
      absl::StrSplit(absl::GetFlag(FLAGS_target), ',');
  const int n = absl::GetFlag(FLAGS_streams);
  const int flows = absl::GetFlag(FLAGS_flows);
  const bool closed = absl::GetFlag(FLAGS_mode) == "closed";
  const int reports = absl::GetFlag(FLAGS_reports);
  const int nchan = std::max(1, absl::GetFlag(FLAGS_channels));

  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs;
  // nchan channels per target: target t's are [t * nchan, (t + 1) * nchan).
  for (const std::string& target : targets) {
    for (int c = 0; c < nchan; ++c) {
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // One TCP each.
      args.SetMaxReceiveMessageSize(64 << 20);
      channels.push_back(grpc::CreateCustomChannel(
          target, grpc::InsecureChannelCredentials(), args));
      stubs.push_back(std::make_unique<grpc::GenericStub>(channels.back()));
    }
  }

  Shared shared;
  shared.follow_leader = absl::GetFlag(FLAGS_follow_leader);
  // With --follow_leader: which target leads, as AskLeader says.
  std::atomic<int> leader{0};
  std::atomic<bool> leader_known{false};
  std::thread leader_tracker;
  if (shared.follow_leader) {
    leader_tracker = std::thread([&] {
      while (!shared.stopping.load()) {
        // The replica that names itself leads; a follower may not know yet.
        for (size_t t = 0; t < targets.size(); ++t) {
          auto stub = meta::Heartbeat::NewStub(channels[t * nchan]);
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::seconds(1));
          meta::AskLeaderResponse resp;
          if (stub->AskLeader(&ctx, {}, &resp).ok() &&
              resp.leader().addr() == targets[t]) {
            leader.store(static_cast<int>(t));
            leader_known.store(true);
            break;
          }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  // Start the streams on the leader (bounded wait).
  for (int i = 0; shared.follow_leader && !leader_known.load() && i < 1000;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto stub_for = [&](int k) {
    return stubs[static_cast<size_t>(leader.load() * nchan + k % nchan)].get();
  };
  const Clock::time_point start = Clock::now();
  const auto warmup = absl::ToChronoNanoseconds(absl::GetFlag(FLAGS_warmup));
  const auto duration =
      absl::ToChronoNanoseconds(absl::GetFlag(FLAGS_duration));
  shared.measure_from = start + warmup;
  shared.measure_to =
      reports > 0 ? Clock::time_point::max() : shared.measure_from + duration;

  std::vector<std::unique_ptr<Flownode>> nodes;
  nodes.reserve(n);
  std::vector<std::unique_ptr<Flownode>>
      ended;  // Streams replaced (--follow_leader).
  const uint64_t offset = absl::GetFlag(FLAGS_node_offset);
  for (int i = 0; i < n; ++i) {
    nodes.push_back(std::make_unique<Flownode>(
        stub_for(i), offset + i, flows, closed, reports,
        absl::GetFlag(FLAGS_gzip), &shared));
  }
  // Wait for every handshake (bounded). With --follow_leader, a stream a
  // step-down ended before its handshake counts as settled: the scheduler
  // opens it again on the new leader.
  auto settled = [&] {
    int count = 0;
    for (auto& node : nodes) count += node->ready() || node->finished() ? 1 : 0;
    return count;
  };
  const Clock::time_point handshake_deadline =
      Clock::now() + std::chrono::seconds(60);
  while (shared.ready.load() < n && Clock::now() < handshake_deadline &&
         !(shared.follow_leader && settled() == n)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (shared.ready.load() < n && !shared.follow_leader) {
    std::fprintf(stderr, "only %d of %d streams completed the handshake\n",
                 shared.ready.load(), n);
    shared.errors.fetch_add(n - shared.ready.load());
  }
  // Restart the clock now that all streams are open.
  const Clock::time_point t0 = Clock::now();
  shared.measure_from = t0 + warmup;
  if (reports == 0) shared.measure_to = shared.measure_from + duration;
  // The server's CPU over exactly the measured window.
  double server_cpu_s = -1;
  std::thread cpu_sampler;
  if (const int pid = absl::GetFlag(FLAGS_server_pid);
      pid > 0 && reports == 0) {
    cpu_sampler = std::thread([&shared, pid, &server_cpu_s] {
      std::this_thread::sleep_until(shared.measure_from);
      const double from = ProcessCpuSeconds(pid);
      std::this_thread::sleep_until(shared.measure_to);
      const double to = ProcessCpuSeconds(pid);
      if (from >= 0 && to >= 0) server_cpu_s = to - from;
    });
  }

  std::vector<std::thread> readers;
  std::vector<Samples> reader_samples(absl::GetFlag(FLAGS_state_readers) +
                                      absl::GetFlag(FLAGS_range_readers));
  std::atomic<int64_t> reader_flows{0};
  for (size_t r = 0; r < reader_samples.size(); ++r) {
    const bool range =
        static_cast<int>(r) >= absl::GetFlag(FLAGS_state_readers);
    readers.emplace_back(Reader, channels[r % nchan], range, &shared,
                         &reader_samples[r], &reader_flows);
  }

  std::vector<std::unique_ptr<grpc::GenericStub>> watch_stubs;
  for (auto& channel : channels)
    watch_stubs.push_back(std::make_unique<grpc::GenericStub>(channel));
  std::vector<std::unique_ptr<Watcher>> watchers;
  for (int w = 0; w < absl::GetFlag(FLAGS_watchers); ++w) {
    watchers.push_back(std::make_unique<Watcher>(
        watch_stubs[w % nchan].get(), &shared, absl::GetFlag(FLAGS_watch_stall),
        absl::GetFlag(FLAGS_watch_deltas),
        absl::GetFlag(FLAGS_watch_interval_ms)));
  }

  if (closed) {
    for (auto& node : nodes) node->Due(Clock::now());  // Start each loop.
    if (reports > 0) {
      while (shared.finished.load() < n &&
             Clock::now() < t0 + std::chrono::minutes(10)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    } else {
      std::this_thread::sleep_until(shared.measure_to);
    }
  } else {
    // Fixed phases: stream k is due at t0 + k*P/N + m*P.
    const auto period =
        absl::ToChronoNanoseconds(absl::GetFlag(FLAGS_interval));
    const Clock::time_point end =
        reports > 0 ? t0 + period * reports + std::chrono::seconds(5)
                    : shared.measure_to;
    // Round m begins at t0 + m*P; none begins after the end (an interval
    // longer than the run means one round).
    for (int64_t m = 0; t0 + period * m < end; ++m) {
      for (int k = 0; k < n; ++k) {
        const Clock::time_point due = t0 + period * m + period * k / n;
        if (due >= end) break;
        std::this_thread::sleep_until(due);
        if (shared.follow_leader && nodes[k]->finished()) {
          // Ended by a step-down: a new stream to the leader now. The old
          // reactor is kept: gRPC may still be returning from OnDone.
          ended.push_back(std::move(nodes[k]));
          nodes[k] = std::make_unique<Flownode>(
              stub_for(k), offset + k, flows, closed, reports,
              absl::GetFlag(FLAGS_gzip), &shared);
        }
        nodes[k]->Due(due);
      }
      if (reports > 0 && shared.finished.load() == n) break;
    }
    std::this_thread::sleep_until(end);
  }
  const Clock::time_point stop_at = Clock::now();
  if (cpu_sampler.joinable()) cpu_sampler.join();
  shared.stopping = true;
  if (leader_tracker.joinable()) leader_tracker.join();
  for (auto& t : readers) t.join();
  // Let the last answers arrive, then end the streams.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (auto& node : nodes) node->Stop();
  for (auto& w : watchers) w->Stop();
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(30);
  for (auto& w : watchers) {
    while (!w->finished() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  for (auto& node : nodes) {
    while (!node->finished() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  std::vector<double> all;
  for (auto& node : ended) {
    Samples s = node->TakeSamples();
    all.insert(all.end(), s.us.begin(), s.us.end());
  }
  for (auto& node : nodes) {
    Samples s = node->TakeSamples();
    all.insert(all.end(), s.us.begin(), s.us.end());
  }
  std::vector<double> watch_ages;
  int64_t watch_flows = 0, watch_deltas = 0, watch_delta_flows = 0;
  for (auto& w : watchers) {
    Samples s = w->TakeSamples();
    watch_ages.insert(watch_ages.end(), s.us.begin(), s.us.end());
    watch_flows = std::max(watch_flows, w->flows());
    const auto [d, df] = w->deltas();
    watch_deltas += d;
    watch_delta_flows += df;
  }
  const int state_readers = absl::GetFlag(FLAGS_state_readers);
  std::vector<double> state_reads, range_reads;
  for (size_t r = 0; r < reader_samples.size(); ++r) {
    auto& into =
        static_cast<int>(r) < state_readers ? state_reads : range_reads;
    into.insert(into.end(), reader_samples[r].us.begin(),
                reader_samples[r].us.end());
  }
  const double window_s =
      reports > 0
          ? std::chrono::duration<double>(stop_at - shared.measure_from).count()
          : absl::ToDoubleSeconds(absl::GetFlag(FLAGS_duration));
  const double msgs = static_cast<double>(all.size());
  std::printf(
      "RESULT {\"target\":\"%s\",\"mode\":\"%s\",\"streams\":%d,\"flows\":%d,"
      "\"window_s\":%.2f,\"msgs\":%.0f,\"msgs_per_s\":%.1f,\"p50_us\":%.1f,"
      "\"p99_us\":%.1f,\"p999_us\":%.1f,\"errors\":%lld,\"late\":%lld,"
      "\"state_reads\":%zu,\"state_p50_us\":%.1f,\"state_p99_us\":%.1f,"
      "\"range_reads\":%zu,\"range_p50_us\":%.1f,\"range_p99_us\":%.1f,"
      "\"read_flows\":%lld,\"read_bytes\":%lld,\"watchers\":%zu,\"watch_msgs\":"
      "%zu,"
      "\"watch_age_p50_ms\":%.1f,\"watch_age_p99_ms\":%.1f,\"watch_flows\":%"
      "lld,\"watch_deltas\":%lld,\"watch_delta_flows_avg\":%.1f,"
      "\"redirects\":%lld,\"not_leader\":%lld,\"server_cpu_s\":%.2f}\n",
      absl::GetFlag(FLAGS_label).c_str(), closed ? "closed" : "open", n, flows,
      window_s, msgs, msgs / window_s, Percentile(all, 0.50),
      Percentile(all, 0.99), Percentile(all, 0.999),
      static_cast<long long>(shared.errors.load()),
      static_cast<long long>(shared.late.load()), state_reads.size(),
      Percentile(state_reads, 0.50), Percentile(state_reads, 0.99),
      range_reads.size(), Percentile(range_reads, 0.50),
      Percentile(range_reads, 0.99),
      static_cast<long long>(reader_flows.load()),
      static_cast<long long>(shared.read_bytes.load()), watchers.size(),
      watch_ages.size(), Percentile(watch_ages, 0.50) / 1000.0,
      Percentile(watch_ages, 0.99) / 1000.0,
      static_cast<long long>(watch_flows), static_cast<long long>(watch_deltas),
      watch_deltas > 0 ? static_cast<double>(watch_delta_flows) /
                             static_cast<double>(watch_deltas)
                       : 0.0,
      static_cast<long long>(shared.redirects.load()),
      static_cast<long long>(shared.not_leader.load()), server_cpu_s);
  return shared.errors.load() == 0 ? 0 : 1;
}
