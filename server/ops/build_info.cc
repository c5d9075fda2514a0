#include "server/ops/build_info.h"

#include "build_commit.h"  // METASRV_GIT_COMMIT, written at build time.

#ifndef METASRV_VERSION
#define METASRV_VERSION "dev"
#endif
#ifndef METASRV_BUILD_TYPE
#define METASRV_BUILD_TYPE "unknown"
#endif

namespace metasrv::server {

BuildInfo GetBuildInfo() {
  return {METASRV_VERSION, METASRV_GIT_COMMIT, METASRV_BUILD_TYPE};
}

}  // namespace metasrv::server
