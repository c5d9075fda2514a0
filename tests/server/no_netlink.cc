// Runs a command the way the shipped systemd unit's
// RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX runs it: socket() of any
// other family (netlink, which getifaddrs needs, included) fails with
// EAFNOSUPPORT, under a seccomp filter that the command cannot lift.
//   no_netlink COMMAND [ARGS...]
#include <seccomp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: no_netlink COMMAND [ARGS...]\n");
    return 2;
  }
  scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
  if (filter == nullptr ||
      seccomp_rule_add(filter, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket),
                       1, SCMP_A0(SCMP_CMP_EQ, AF_NETLINK)) != 0 ||
      seccomp_load(filter) != 0) {
    std::fprintf(stderr, "no_netlink: cannot install the seccomp filter\n");
    return 1;
  }
  seccomp_release(filter);
  execv(argv[1], argv + 1);
  std::perror("no_netlink: execv");
  return 127;
}
