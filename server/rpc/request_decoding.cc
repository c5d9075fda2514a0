#include "server/rpc/request_decoding.h"

#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace metasrv::server {
namespace {

// Output of one inflation is kept per thread and reused; a thread that once
// inflated a large request gives the memory back above this.
constexpr size_t kKeepBytes = 1 << 20;

struct DctxFree {
  void operator()(ZSTD_DCtx* dctx) const { ZSTD_freeDCtx(dctx); }
};

// zlib's stream for gzip (RFC 1952), set up once per thread.
struct Gunzip {
  z_stream z{};
  bool ready = inflateInit2(&z, 16 + MAX_WBITS) == Z_OK;
  Gunzip() = default;
  Gunzip(const Gunzip&) = delete;
  Gunzip& operator=(const Gunzip&) = delete;
  ~Gunzip() {
    if (ready) inflateEnd(&z);
  }
};

// One inflater of each kind and output buffer per thread.
struct Inflater {
  std::unique_ptr<ZSTD_DCtx, DctxFree> dctx{ZSTD_createDCtx()};  // Reused.
  Gunzip gunzip;    // Reused.
  std::string out;  // The last inflated request.
};

// Makes room in `out` (of which `produced` bytes are inflated) for more,
// doubling it up to max_bytes + 1 (one byte past the limit proves it is
// exceeded); kResourceExhausted once that is full.
absl::Status Grow(std::string* out, size_t produced, size_t max_bytes,
                  absl::string_view name) {
  if (produced < out->size()) return absl::OkStatus();
  const size_t cap = max_bytes + 1;
  if (out->size() >= cap) {
    return absl::ResourceExhaustedError(
        absl::StrCat(name, "-compressed request inflates to more than the ",
                     "limit of ", max_bytes, " bytes"));
  }
  out->resize(std::min(std::max<size_t>(out->size() * 2, 1 << 10), cap));
  return absl::OkStatus();
}

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
absl::StatusOr<size_t> FirstAllocation(absl::string_view raw,
                                       size_t max_bytes) {
  const unsigned long long declared =
      ZSTD_getFrameContentSize(raw.data(), raw.size());
  if (declared == ZSTD_CONTENTSIZE_UNKNOWN ||
      declared == ZSTD_CONTENTSIZE_ERROR) {
    return std::max<size_t>(raw.size() * 4, 16 << 10);
  }
  if (declared > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("zstd-compressed request inflates to ", declared,
                     " bytes, more than the limit of ", max_bytes));
  }
  return static_cast<size_t>(declared) + 1;
}

// Inflates the zstd frames in `raw` into `inflater->out`.
absl::Status InflateZstd(absl::string_view raw, size_t max_bytes,
                     Inflater* inflater) {
  ZSTD_DCtx* dctx = inflater->dctx.get();
  if (dctx == nullptr) return absl::ResourceExhaustedError("out of memory");
  ZSTD_DCtx_reset(dctx, ZSTD_reset_session_and_parameters);
  ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, WindowLogFor(max_bytes));
  std::string& out = inflater->out;
  // Never more than max_bytes + 1: one byte past the limit proves it is
  // exceeded.
  const size_t cap = max_bytes + 1;
  absl::StatusOr<size_t> first = FirstAllocation(raw, max_bytes);
  if (!first.ok()) return first.status();
  out.resize(std::min(*first, cap));
  size_t produced = 0;
  size_t pending = 0;  // Nonzero while a frame is not complete.
  // One decoder call, with room made for its output first.
  auto step = [&](ZSTD_inBuffer* in) -> absl::Status {
    if (absl::Status room = Grow(&out, produced, max_bytes, "zstd");
        !room.ok()) {
      return room;
    }
    ZSTD_outBuffer o{out.data(), out.size(), produced};
    pending = ZSTD_decompressStream(dctx, &o, in);
    if (ZSTD_isError(pending)) return ZstdError(pending, max_bytes);
    produced = o.pos;
    return absl::OkStatus();
  };
  ZSTD_inBuffer in{raw.data(), raw.size(), 0};
  while (in.pos < in.size) {
    if (absl::Status stepped = step(&in); !stepped.ok()) return stepped;
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

// Inflates the gzip members in `raw` into `inflater->out`.
absl::Status InflateGzip(absl::string_view raw, size_t max_bytes,
                         Inflater* inflater) {
  Gunzip& gunzip = inflater->gunzip;
  if (!gunzip.ready) return absl::ResourceExhaustedError("out of memory");
  z_stream& z = gunzip.z;
  std::string& out = inflater->out;
  out.resize(std::min(std::max<size_t>(raw.size() * 4, 16 << 10),
                      max_bytes + 1));
  size_t produced = 0;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  z.avail_in = static_cast<uInt>(raw.size());
  inflateReset(&z);
  for (;;) {
    if (absl::Status room = Grow(&out, produced, max_bytes, "gzip");
        !room.ok()) {
      return room;
    }
    z.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    z.avail_out = static_cast<uInt>(out.size() - produced);
    const int result = inflate(&z, Z_NO_FLUSH);
    produced = out.size() - z.avail_out;
    if (result == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      inflateReset(&z);  // Another member follows.
      continue;
    }
    if (result == Z_BUF_ERROR && z.avail_in == 0) {
      return absl::InvalidArgumentError(
          "gzip-compressed request is truncated: its member does not end");
    }
    if (result != Z_OK && result != Z_BUF_ERROR) {
      return absl::InvalidArgumentError(
          absl::StrCat("gzip-compressed request does not inflate: ",
                       z.msg != nullptr ? z.msg : zError(result)));
    }
  }
  if (produced > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "gzip-compressed request inflates to more than the limit of ",
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

}  // namespace

std::optional<Compression> CompressionNamed(absl::string_view encoding) {
  if (encoding.empty() || encoding == "identity") return Compression::kNone;
  if (encoding == "gzip") return Compression::kGzip;
  if (encoding == "zstd") return Compression::kZstd;
  return std::nullopt;
}

absl::Status DecodeRequest(absl::string_view raw, Compression compression,
                           size_t max_bytes,
                           google::protobuf::MessageLite* message,
                           absl::string_view type, size_t* inflated) {
  if (inflated != nullptr) *inflated = 0;
  std::string own_type;
  if (type.empty()) type = own_type = message->GetTypeName();
  if (compression == Compression::kNone) {
    return message->ParseFromArray(raw.data(), static_cast<int>(raw.size()))
               ? absl::OkStatus()
               : Malformed(type);
  }
  thread_local Inflater inflater;
  absl::Status done = compression == Compression::kZstd
                              ? InflateZstd(raw, max_bytes, &inflater)
                              : InflateGzip(raw, max_bytes, &inflater);
  const bool parsed =
      done.ok() && message->ParseFromArray(
                       inflater.out.data(), static_cast<int>(inflater.out.size()));
  if (inflated != nullptr) *inflated = inflater.out.size();
  if (inflater.out.capacity() > kKeepBytes) std::string().swap(inflater.out);
  if (!done.ok()) return done;
  return parsed ? absl::OkStatus() : Malformed(type);
}

}  // namespace metasrv::server
