// The addresses of the election's stores that both the configuration's
// check and the stores themselves read: below both, so that neither depends
// on the other.
#ifndef METASRV_SERVER_OPS_STORE_ADDRESS_H_
#define METASRV_SERVER_OPS_STORE_ADDRESS_H_

#include <string>

#include "absl/status/statusor.h"

namespace metasrv::server {

// The parts of a mysql://user:password@host:port/database URL (GreptimeDB's
// store_addrs for mysql_store). Percent-escapes in user and password are
// decoded; the port defaults to 3306. kInvalidArgument if it is not one.
struct MysqlAddress {
  std::string user, password, host, database;
  unsigned port = 3306;
};
absl::StatusOr<MysqlAddress> ParseMysqlAddress(const std::string& url);

}  // namespace metasrv::server

#endif  // METASRV_SERVER_OPS_STORE_ADDRESS_H_
