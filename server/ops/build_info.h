// What this binary is: version, git commit, build type.
#ifndef METASRV_SERVER_OPS_BUILD_INFO_H_
#define METASRV_SERVER_OPS_BUILD_INFO_H_

namespace metasrv::server {

struct BuildInfo {
  const char* version;     // The project version, "0.1.0".
  const char* commit;      // Short git commit at configure time, or "unknown".
  const char* build_type;  // CMAKE_BUILD_TYPE: "Release", "Debug", ...
};

// This binary's; fixed at build time.
BuildInfo GetBuildInfo();

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_BUILD_INFO_H_
