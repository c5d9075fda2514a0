#include "server/ops/build_info.h"

#ifndef METASRV_VERSION
#define METASRV_VERSION "dev"
#endif
#ifndef METASRV_GIT_COMMIT
#define METASRV_GIT_COMMIT "unknown"
#endif
#ifndef METASRV_BUILD_TYPE
#define METASRV_BUILD_TYPE "unknown"
#endif

namespace metasrv::server {

BuildInfo GetBuildInfo() {
  return {METASRV_VERSION, METASRV_GIT_COMMIT, METASRV_BUILD_TYPE};
}

}  // namespace metasrv::server
