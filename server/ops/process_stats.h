// This process's resource use, from /proc/self (Linux).
#ifndef METASRV_SERVER_OPS_PROCESS_STATS_H_
#define METASRV_SERVER_OPS_PROCESS_STATS_H_

namespace metasrv::server {

struct ProcessStats {
  double cpu_seconds = 0;         // User + system CPU time.
  double resident_bytes = 0;      // RSS.
  double virtual_bytes = 0;       // Virtual memory size.
  double open_fds = 0;            // Entries of /proc/self/fd.
  double max_fds = 0;             // RLIMIT_NOFILE's soft limit.
  double start_time_seconds = 0;  // Start, since the Unix epoch.
};

// Reads them now; a field that cannot be read stays 0. Thread-safe.
ProcessStats ReadProcessStats();

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_PROCESS_STATS_H_
