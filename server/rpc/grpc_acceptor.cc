#include "server/rpc/grpc_acceptor.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/ops/threads.h"

namespace metasrv::server {

GrpcAcceptor::GrpcAcceptor(int descriptor_ceiling)
    : descriptor_ceiling_(descriptor_ceiling),
      stop_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

absl::Status GrpcAcceptor::Listen(const std::string& addr) {
  absl::StatusOr<std::unique_ptr<TcpListener>> listener =
      TcpListener::Listen(addr, "--bind_addr");
  if (!listener.ok()) return listener.status();
  listener_ = *std::move(listener);
  port_ = listener_->port();
  return absl::OkStatus();
}

GrpcAcceptor::~GrpcAcceptor() {
  Stop();
  if (stop_fd_ >= 0) close(stop_fd_);
}

void GrpcAcceptor::Start(Handover into, Listeners listeners) {
  if (thread_.joinable() || listener_ == nullptr) return;
  into_ = std::move(into);
  listeners_ = std::move(listeners);
  thread_ = StartThread(ThreadRole::kAcceptor, [this] { Run(); });
}

void GrpcAcceptor::Stop() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof(one));
    thread_.join();
  }
  listener_.reset();
}

bool GrpcAcceptor::Accepting() const {
  return DescriptorFreeBelow(descriptor_ceiling_);
}

void GrpcAcceptor::Run() {
  bool accepting = true;  // As last told to on_accepting.
  bool paused = false;    // Out of descriptors: connections wait queued.
  const auto hand_over = [this](const TcpListener::Accepted& accepted) {
    into_(accepted.fd, accepted.peer);  // Theirs from here.
  };
  const auto refused = [this] {
    if (listeners_.on_refused) listeners_.on_refused();
  };
  for (;;) {
    // While it cannot accept, it looks again this often.
    const int timeout_ms = paused ? 50 : (accepting ? -1 : 1000);
    pollfd fds[2] = {
        {stop_fd_, POLLIN, 0},
        {listener_->fd(), static_cast<short>(paused ? 0 : POLLIN), 0}};
    poll(fds, 2, timeout_ms);
    if (fds[0].revents != 0) return;
    if (paused || fds[1].revents != 0) {
      paused = !listener_->AcceptAll(descriptor_ceiling_, hand_over, refused);
    }
    const bool now = !paused && Accepting();
    if (now != accepting) {
      accepting = now;
      if (listeners_.on_accepting) listeners_.on_accepting(now);
    }
  }
}

}  // namespace metasrv::server
