#include "server/rpc/grpc151_zstd_requests.h"

#include <google/protobuf/io/zero_copy_stream.h>
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"

namespace metasrv::server {
namespace {

constexpr unsigned char kZstdMagic[4] = {0x28, 0xb5, 0x2f, 0xfd};

// Output of one inflation is kept per thread and reused; a thread that once
// inflated a large request gives the memory back above this.
constexpr size_t kKeepBytes = 1 << 20;

struct DctxFree {
  void operator()(ZSTD_DCtx* dctx) const { ZSTD_freeDCtx(dctx); }
};

// One inflater and output buffer per thread.
struct Inflater {
  std::unique_ptr<ZSTD_DCtx, DctxFree> dctx{ZSTD_createDCtx()};  // Reused.
  std::string out;  // The last inflated request.
};

// The smallest window log that covers `max_bytes`: a frame asking for a
// larger window (and so more memory) is refused before anything is
// allocated for it.
int WindowLogFor(size_t max_bytes) {
  int log = 10;  // zstd's smallest window log.
  while (log < 27 && (size_t{1} << log) < max_bytes) ++log;
  return log;
}

absl::Status ZstdError(size_t code, size_t max_bytes) {
  const ZSTD_ErrorCode error = ZSTD_getErrorCode(code);
  if (error == ZSTD_error_frameParameter_windowTooLarge) {
    return absl::ResourceExhaustedError(
        absl::StrCat("zstd-compressed request needs a window larger than the ",
                     max_bytes, "-byte message limit"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "zstd-compressed request does not decode: ", ZSTD_getErrorName(code)));
}

// The output buffer to start with: a declared content size if the frame has
// one (kResourceExhausted if it is past `max_bytes`), else a guess from the
// input size. Only sizes the first allocation: the decoder's output is
// bounded whatever the frame declares.
absl::StatusOr<size_t> FirstAllocation(absl::Span<const grpc_slice> slices,
                                       size_t max_bytes) {
  size_t input_bytes = 0;
  for (const grpc_slice& s : slices) input_bytes += GRPC_SLICE_LENGTH(s);
  const unsigned long long declared = ZSTD_getFrameContentSize(
      GRPC_SLICE_START_PTR(slices.front()), GRPC_SLICE_LENGTH(slices.front()));
  if (declared == ZSTD_CONTENTSIZE_UNKNOWN ||
      declared == ZSTD_CONTENTSIZE_ERROR) {
    return std::max<size_t>(input_bytes * 4, 16 << 10);
  }
  if (declared > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("zstd-compressed request inflates to ", declared,
                     " bytes, more than the limit of ", max_bytes));
  }
  return static_cast<size_t>(declared) + 1;
}

// Inflates the zstd frames in `slices` into `inflater->out`.
absl::Status Inflate(absl::Span<const grpc_slice> slices, size_t max_bytes,
                     Inflater* inflater) {
  ZSTD_DCtx* dctx = inflater->dctx.get();
  if (dctx == nullptr) return absl::ResourceExhaustedError("out of memory");
  ZSTD_DCtx_reset(dctx, ZSTD_reset_session_and_parameters);
  ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, WindowLogFor(max_bytes));
  std::string& out = inflater->out;
  // Never more than max_bytes + 1: one byte past the limit proves it is
  // exceeded.
  const size_t cap = max_bytes + 1;
  absl::StatusOr<size_t> first = FirstAllocation(slices, max_bytes);
  if (!first.ok()) return first.status();
  out.resize(std::min(*first, cap));
  size_t produced = 0;
  size_t pending = 0;  // Nonzero while a frame is not complete.
  // One decoder call, with room made for its output first.
  auto step = [&](ZSTD_inBuffer* in) -> absl::Status {
    if (produced == out.size()) {
      if (out.size() == cap) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "zstd-compressed request inflates to more than the limit of ",
            max_bytes, " bytes"));
      }
      out.resize(std::min(out.size() * 2, cap));
    }
    ZSTD_outBuffer o{out.data(), out.size(), produced};
    pending = ZSTD_decompressStream(dctx, &o, in);
    if (ZSTD_isError(pending)) return ZstdError(pending, max_bytes);
    produced = o.pos;
    return absl::OkStatus();
  };
  for (const grpc_slice& s : slices) {
    ZSTD_inBuffer in{GRPC_SLICE_START_PTR(s), GRPC_SLICE_LENGTH(s), 0};
    while (in.pos < in.size) {
      if (absl::Status stepped = step(&in); !stepped.ok()) return stepped;
    }
  }
  // The input is consumed; the decoder may still hold output to flush.
  while (pending != 0) {
    ZSTD_inBuffer none{nullptr, 0, 0};
    const size_t before = produced;
    if (absl::Status stepped = step(&none); !stepped.ok()) return stepped;
    if (pending != 0 && produced == before && produced < out.size()) {
      return absl::InvalidArgumentError(
          "zstd-compressed request is truncated: its frame does not end");
    }
  }
  if (produced > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "zstd-compressed request inflates to more than the limit of ",
        max_bytes, " bytes"));
  }
  out.resize(produced);
  return absl::OkStatus();
}

absl::Status Malformed(absl::string_view type) {
  const size_t dot = type.rfind('.');
  return absl::InvalidArgumentError(
      absl::StrCat("malformed ",
                   dot == absl::string_view::npos ? type : type.substr(dot + 1),
                   ": the bytes do not parse as ", type));
}

// The bytes of several slices as one stream, without copying them.
class SliceInput final : public google::protobuf::io::ZeroCopyInputStream {
 public:
  explicit SliceInput(absl::Span<const grpc_slice> slices) : slices_(slices) {}

  bool Next(const void** data, int* size) override {
    while (index_ < slices_.size()) {
      const grpc_slice& s = slices_[index_];
      const size_t length = GRPC_SLICE_LENGTH(s);
      if (offset_ < length) {
        *data = GRPC_SLICE_START_PTR(s) + offset_;
        *size = static_cast<int>(length - offset_);
        count_ += length - offset_;
        offset_ = length;
        return true;
      }
      ++index_;
      offset_ = 0;
    }
    return false;
  }
  void BackUp(int count) override {
    offset_ -= static_cast<size_t>(count);
    count_ -= count;
  }
  bool Skip(int count) override {
    const void* data = nullptr;
    int size = 0;
    while (count > 0 && Next(&data, &size)) {
      if (size > count) {
        BackUp(size - count);
        return true;
      }
      count -= size;
    }
    return count == 0;
  }
  int64_t ByteCount() const override { return count_; }

 private:
  absl::Span<const grpc_slice> slices_;  // The bytes, in order; borrowed.
  size_t index_ = 0;                     // The slice being read.
  size_t offset_ = 0;                    // Bytes of it handed out.
  int64_t count_ = 0;                    // Bytes handed out in all.
};

bool StartsWithZstdMagic(absl::Span<const grpc_slice> slices) {
  unsigned char head[sizeof(kZstdMagic)];
  size_t got = 0;
  for (const grpc_slice& s : slices) {
    const uint8_t* p = GRPC_SLICE_START_PTR(s);
    for (size_t i = 0; i < GRPC_SLICE_LENGTH(s) && got < sizeof(head); ++i) {
      head[got++] = p[i];
    }
    if (got == sizeof(head)) break;
  }
  return got == sizeof(head) &&
         std::equal(head, head + sizeof(head), kZstdMagic);
}

// Parses the request in `slices` (zstd or not) into `message`.
absl::Status DecodeSlices(absl::Span<const grpc_slice> slices, size_t max_bytes,
                          google::protobuf::MessageLite* message,
                          absl::string_view type) {
  if (!StartsWithZstdMagic(slices)) {
    bool parsed = false;
    if (slices.size() == 1) {
      parsed = message->ParseFromArray(GRPC_SLICE_START_PTR(slices[0]),
                                       GRPC_SLICE_LENGTH(slices[0]));
    } else {
      SliceInput input(slices);
      parsed = message->ParseFromZeroCopyStream(&input);
    }
    return parsed ? absl::OkStatus() : Malformed(type);
  }
  thread_local Inflater inflater;
  absl::Status inflated = Inflate(slices, max_bytes, &inflater);
  const bool parsed =
      inflated.ok() &&
      message->ParseFromArray(inflater.out.data(),
                              static_cast<int>(inflater.out.size()));
  if (inflater.out.capacity() > kKeepBytes) std::string().swap(inflater.out);
  if (!inflated.ok()) return inflated;
  return parsed ? absl::OkStatus() : Malformed(type);
}

// The core slices `slices` wrap, without taking references (Slice::c_slice
// takes one): a grpc::Slice is exactly a grpc_slice, as grpc::ByteBuffer's
// own constructor relies on.
absl::Span<const grpc_slice> AsCoreSlices(const grpc::Slice* slices,
                                          size_t count) {
  static_assert(sizeof(grpc::Slice) == sizeof(grpc_slice),
                "grpc::Slice wraps a grpc_slice and nothing else");
  return absl::MakeConstSpan(reinterpret_cast<const grpc_slice*>(slices),
                             count);
}

}  // namespace

bool IsZstdFrame(const grpc::ByteBuffer& raw) {
  std::vector<grpc::Slice> slices;
  if (!raw.Dump(&slices).ok()) return false;
  return StartsWithZstdMagic(AsCoreSlices(slices.data(), slices.size()));
}

absl::Status DecodeRequest(grpc::ByteBuffer* raw, size_t max_bytes,
                           google::protobuf::MessageLite* message,
                           absl::string_view type) {
  std::string own_type;
  if (type.empty()) type = own_type = message->GetTypeName();
  // A small message is one slice: no vector.
  grpc::Slice single;  // Holds a reference while it is read.
  if (raw->TrySingleSlice(&single).ok()) {
    return DecodeSlices(AsCoreSlices(&single, 1), max_bytes, message, type);
  }
  std::vector<grpc::Slice> slices;  // Holds the references.
  if (!raw->Dump(&slices).ok()) return Malformed(type);
  return DecodeSlices(AsCoreSlices(slices.data(), slices.size()), max_bytes,
                      message, type);
}

absl::Status DecodeRequest(absl::string_view raw, size_t max_bytes,
                           google::protobuf::MessageLite* message,
                           absl::string_view type) {
  std::string own_type;
  if (type.empty()) type = own_type = message->GetTypeName();
  // Refers to the bytes, which outlive it; no reference is counted.
  const grpc_slice slice = grpc_slice_from_static_buffer(raw.data(), raw.size());
  return DecodeSlices(absl::MakeConstSpan(&slice, 1), max_bytes, message,
                      type);
}

absl::Status DecodeRequest(grpc_byte_buffer* raw, size_t max_bytes,
                           google::protobuf::MessageLite* message,
                           absl::string_view type) {
  std::string own_type;
  if (type.empty()) type = own_type = message->GetTypeName();
  if (raw == nullptr) return Malformed(type);
  if (raw->type == GRPC_BB_RAW &&
      raw->data.raw.compression == GRPC_COMPRESS_NONE) {
    const grpc_slice_buffer& buffer = raw->data.raw.slice_buffer;
    return DecodeSlices(absl::MakeConstSpan(buffer.slices, buffer.count),
                        max_bytes, message, type);
  }
  // Compressed by gRPC itself (not zstd, which it passes on): its reader
  // inflates.
  grpc_byte_buffer_reader reader;
  if (!grpc_byte_buffer_reader_init(&reader, raw)) return Malformed(type);
  grpc_slice all = grpc_byte_buffer_reader_readall(&reader);
  grpc_byte_buffer_reader_destroy(&reader);
  absl::Status decoded =
      DecodeSlices(absl::MakeConstSpan(&all, 1), max_bytes, message, type);
  grpc_slice_unref(all);
  return decoded;
}

}  // namespace metasrv::server
