#include "server/election/lease_store.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>

#include "absl/time/clock.h"

namespace metasrv::server {

int WaitForSocket(int fd, bool read, bool write, absl::Time deadline) {
  pollfd p{};
  p.fd = fd;
  p.events = static_cast<short>((read ? POLLIN : 0) | (write ? POLLOUT : 0));
  while (true) {
    const int64_t left_ms = std::max<int64_t>(
        0, absl::ToInt64Milliseconds(deadline - absl::Now()) + 1);
    const int r =
        poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, 60000)));
    if (r > 0) return p.revents;
    if (r == 0) {
      if (absl::Now() >= deadline) return 0;
      continue;
    }
    if (errno != EINTR) return -1;
  }
}

std::string LikePrefix(const std::string& prefix) {
  std::string out;
  out.reserve(prefix.size() + 2);
  for (char c : prefix) {
    if (c == '%' || c == '_' || c == '!') out.push_back('!');
    out.push_back(c);
  }
  out.push_back('%');
  return out;
}

}  // namespace metasrv::server
