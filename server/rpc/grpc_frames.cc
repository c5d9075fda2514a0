#include "server/rpc/grpc_frames.h"

#include <algorithm>

#include "absl/strings/ascii.h"

namespace metasrv::server {

absl::Status MessageAssembler::Feed(
    absl::string_view data, absl::FunctionRef<void(bool, std::string)> emit) {
  while (!data.empty()) {
    if (have_ < kMessagePrefixBytes) {
      const size_t take = std::min(kMessagePrefixBytes - have_, data.size());
      std::copy_n(data.data(), take, prefix_ + have_);
      have_ += take;
      data.remove_prefix(take);
      if (have_ < kMessagePrefixBytes) return absl::OkStatus();
      const auto* p = reinterpret_cast<const unsigned char*>(prefix_);
      if (p[0] > 1) {
        return absl::InternalError("a message's compressed flag is not 0 or 1");
      }
      length_ = (size_t{p[1]} << 24) | (size_t{p[2]} << 16) |
                (size_t{p[3]} << 8) | size_t{p[4]};
      if (length_ > max_bytes_) {
        return absl::ResourceExhaustedError(
            "a request message is longer than --max_message_bytes");
      }
      body_.clear();
      // What arrives, not what the prefix claims: a client that announces
      // 4 MiB and sends 5 bytes holds 5 bytes.
      body_.reserve(std::min<size_t>(length_, 16 << 10));
    }
    const size_t take =
        std::min(length_ - (have_ - kMessagePrefixBytes), data.size());
    body_.append(data.data(), take);
    have_ += take;
    data.remove_prefix(take);
    if (have_ == kMessagePrefixBytes + length_) {
      have_ = 0;
      emit(prefix_[0] == 1, std::move(body_));
      body_ = std::string();
    }
  }
  return absl::OkStatus();
}

void WriteMessagePrefix(bool compressed, uint32_t length, char* out) {
  out[0] = compressed ? 1 : 0;
  out[1] = static_cast<char>(length >> 24);
  out[2] = static_cast<char>(length >> 16);
  out[3] = static_cast<char>(length >> 8);
  out[4] = static_cast<char>(length);
}

std::optional<absl::Duration> ParseGrpcTimeout(absl::string_view value) {
  if (value.size() < 2 || value.size() > 9) return std::nullopt;
  int64_t n = 0;
  for (char c : value.substr(0, value.size() - 1)) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      return std::nullopt;
    }
    n = n * 10 + (c - '0');
  }
  switch (value.back()) {
    case 'H': return absl::Hours(n);
    case 'M': return absl::Minutes(n);
    case 'S': return absl::Seconds(n);
    case 'm': return absl::Milliseconds(n);
    case 'u': return absl::Microseconds(n);
    case 'n': return absl::Nanoseconds(n);
    default: return std::nullopt;
  }
}

std::string PercentEncode(absl::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c >= 0x20 && c <= 0x7e && c != '%') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace metasrv::server
