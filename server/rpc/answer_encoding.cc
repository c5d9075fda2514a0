#include "server/rpc/answer_encoding.h"

#include <zstd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

namespace metasrv::server {
namespace {

struct CctxFree {
  void operator()(ZSTD_CCtx* cctx) const { ZSTD_freeCCtx(cctx); }
};

}  // namespace

Compression AnswerCompressionFor(absl::string_view accept) {
  for (absl::string_view name : absl::StrSplit(accept, ',')) {
    if (absl::StripAsciiWhitespace(name) == "zstd") return Compression::kZstd;
  }
  return Compression::kNone;
}

absl::string_view EncodingName(Compression compression) {
  switch (compression) {
    case Compression::kGzip:
      return "gzip";
    case Compression::kZstd:
      return "zstd";
    case Compression::kNone:
      break;
  }
  return "identity";
}

std::shared_ptr<const std::string> CompressZstd(const SharedPieces& plain) {
  const size_t length = LengthOf(plain);
  if (length < kCompressFromBytes) return nullptr;
  thread_local std::unique_ptr<ZSTD_CCtx, CctxFree> cctx(ZSTD_createCCtx());
  if (cctx == nullptr) return nullptr;
  ZSTD_CCtx_reset(cctx.get(), ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel,
                         kAnswerZstdLevel);
  // The frame says its size, so a reader can size its buffer at once.
  ZSTD_CCtx_setPledgedSrcSize(cctx.get(), length);
  // Anything not smaller than the answer is not worth sending.
  auto out = std::make_shared<std::string>(length, '\0');
  ZSTD_outBuffer dst{out->data(), out->size(), 0};
  for (size_t i = 0; i < plain.size(); ++i) {
    ZSTD_inBuffer src{plain[i].bytes.data(), plain[i].bytes.size(), 0};
    const bool last = i + 1 == plain.size();
    for (;;) {
      const size_t left = ZSTD_compressStream2(
          cctx.get(), &dst, &src, last ? ZSTD_e_end : ZSTD_e_continue);
      if (ZSTD_isError(left) || dst.pos == dst.size) return nullptr;
      if (last ? left == 0 : src.pos == src.size) break;
    }
  }
  out->resize(dst.pos);
  out->shrink_to_fit();
  return out;
}

}  // namespace metasrv::server
