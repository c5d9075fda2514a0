#include "tests/cli/ctl_run.h"

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <sys/wait.h>

#include <optional>

#include "absl/time/time.h"
#include "tests/server/test_util.h"

namespace metasrv::testing {

CtlRun Ctl(const std::vector<std::string>& args, bool and_stderr) {
  std::vector<std::string> argv = {METASRVCTL_BINARY};
  if (and_stderr) {
    argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", METASRVCTL_BINARY};
  }
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess p(argv);
  CtlRun run;
  while (auto line = p.ReadLine(absl::Seconds(20))) run.out += *line + "\n";
  std::optional<int> status = p.Wait(absl::Seconds(20));
  if (status.has_value() && WIFEXITED(*status))
    run.exit_code = WEXITSTATUS(*status);
  return run;
}

google::protobuf::Value ParseJson(const std::string& json) {
  google::protobuf::Value v;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &v).ok())
      << "not JSON: " << json;
  return v;
}

::testing::AssertionResult SameJson(const std::string& got,
                                    const std::string& want) {
  if (google::protobuf::util::MessageDifferencer::Equals(ParseJson(got),
                                                         ParseJson(want))) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << got << " is not " << want;
}

void Report(const std::shared_ptr<grpc::Channel>& channel, uint64_t node,
            uint32_t flow, uint64_t size) {
  HeartbeatClient client(channel);
  ASSERT_TRUE(client.Call(FlowReport(node, {{flow, size, 77}})).has_value());
  ASSERT_TRUE(client.Close().ok());
}

}  // namespace metasrv::testing
