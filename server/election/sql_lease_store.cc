#include "server/election/sql_lease_store.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"

namespace metasrv::server {
namespace {

std::string Micros(absl::Duration d) {
  return absl::StrCat(absl::ToInt64Microseconds(d));
}

}  // namespace

absl::Status SqlLeaseStore::OpenBy(absl::Duration timeout,
                                   absl::Time deadline) {
  if (session_->open()) return absl::OkStatus();
  session_->Close();
  absl::Status connected = session_->Connect(options_, deadline);
  if (!connected.ok()) return connected;
  absl::StatusOr<std::string> table = session_->QuoteIdentifier(options_.table);
  if (!table.ok()) {
    session_->Close();
    return table.status();
  }
  table_ = *std::move(table);
  for (const std::string& sql :
       {dialect_->session_setup(timeout),
        absl::StrReplaceAll(dialect_->create_table, {{"$table", table_}})}) {
    absl::StatusOr<SqlSession::Result> ran = session_->Run(sql, {}, deadline);
    if (!ran.ok()) return ran.status();
  }
  return absl::OkStatus();
}

absl::Status SqlLeaseStore::Open(absl::Duration timeout) {
  return OpenBy(timeout, absl::Now() + timeout);
}

absl::StatusOr<SqlSession::Result> SqlLeaseStore::OpenAndRun(
    const char* sql, const std::vector<std::string>& params,
    absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status open = OpenBy(timeout, deadline);
  if (!open.ok()) return open;
  return session_->Run(absl::StrReplaceAll(sql, {{"$table", table_}}), params,
                       deadline);
}

absl::StatusOr<bool> SqlLeaseStore::Acquire(const std::string& key,
                                            const std::string& holder,
                                            const std::string& value,
                                            absl::Duration ttl,
                                            absl::Duration timeout) {
  absl::StatusOr<SqlSession::Result> r =
      OpenAndRun(dialect_->acquire, {key, holder, value, Micros(ttl)}, timeout);
  if (!r.ok()) return r.status();
  return r->affected > 0;
}

absl::Status SqlLeaseStore::Put(const std::string& key,
                                const std::string& holder,
                                const std::string& value, absl::Duration ttl,
                                absl::Duration timeout) {
  return OpenAndRun(dialect_->put, {key, holder, value, Micros(ttl)}, timeout)
      .status();
}

absl::Status SqlLeaseStore::Release(const std::string& key,
                                    const std::string& holder,
                                    absl::Duration timeout) {
  return OpenAndRun(dialect_->release, {key, holder}, timeout).status();
}

absl::StatusOr<std::vector<LeaseStore::Entry>> SqlLeaseStore::Scan(
    const std::string& prefix, absl::Duration timeout) {
  absl::StatusOr<SqlSession::Result> r =
      OpenAndRun(dialect_->scan, {LikePrefix(prefix)}, timeout);
  if (!r.ok()) return r.status();
  std::vector<Entry> out;
  for (const std::vector<std::string>& row : r->rows) {
    if (row.size() < 3) continue;
    int64_t micros = 0;
    if (!absl::SimpleAtoi(row[2], &micros)) micros = 0;
    out.push_back({row[0], row[1], absl::Microseconds(micros)});
  }
  return out;
}

}  // namespace metasrv::server
