// Running metasrvctl from a test, and reading what it printed: shared by the
// single-server tests (metasrvctl_test.cc) and the replica ones
// (metasrvctl_ha_test.cc).
#ifndef METASRV_TESTS_CLI_CTL_RUN_H_
#define METASRV_TESTS_CLI_CTL_RUN_H_

#include <google/protobuf/struct.pb.h>
#include <grpcpp/channel.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace metasrv::testing {

// What one metasrvctl run left: its exit code (-1 if it did not exit within
// 20 s) and its stdout.
struct CtlRun {
  int exit_code = -1;
  std::string out;
};

// Runs the metasrvctl this test binary was built with (METASRVCTL_BINARY)
// with `args`; with `and_stderr`, its stderr is collected too.
CtlRun Ctl(const std::vector<std::string>& args, bool and_stderr = false);

// `json` parsed; fails the test if it is not JSON.
google::protobuf::Value ParseJson(const std::string& json);

// Whether two JSON texts hold the same value (object keys in any order).
::testing::AssertionResult SameJson(const std::string& got,
                                    const std::string& want);

// Node `node` reports `flow` of `size` bytes over `channel` on one stream,
// then closes it; fails the test if the server does not answer.
void Report(const std::shared_ptr<grpc::Channel>& channel, uint64_t node,
            uint32_t flow, uint64_t size);

}  // namespace metasrv::testing

#endif  // METASRV_TESTS_CLI_CTL_RUN_H_
