// The scrape's reuse rule (server/ops/metrics.h): an exposition that took
// 10 ms or more to build is served again for twenty times that long, timed on
// the clock the Metrics were given; a quick one is built afresh every time.
#include "server/ops/metrics.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "gtest/gtest.h"
#include "server/config/server_options.h"

namespace metasrv::server {
namespace {

// Metrics whose metasrv_flows gauge reads `flows` and whose every build
// takes `build` on `clock` (the source moves the clock, as a slow ranking of
// many flows would move the real one).
class ScrapeReuseTest : public ::testing::Test {
 protected:
  // --metrics_reuse_threshold's default unless a test says otherwise.
  void Make(absl::Duration build, absl::Duration threshold =
                                      ServerOptions().metrics_reuse_threshold) {
    Metrics::Sources sources;
    sources.flows = [this, build] {
      clock_.Advance(build);
      ++builds_;
      return static_cast<double>(flows_);
    };
    metrics_ =
        std::make_unique<Metrics>(std::move(sources), threshold, &clock_);
  }
  // Whether a scrape now shows metasrv_flows `n`.
  bool Shows(int n) const {
    return metrics_->Scrape().find(absl::StrCat("\nmetasrv_flows ", n, "\n")) !=
           std::string::npos;
  }

  core::ManualClock clock_;
  int flows_ = 0;
  int builds_ = 0;
  std::unique_ptr<Metrics> metrics_;
};

TEST_F(ScrapeReuseTest, ASlowBuildIsServedAgainForTwentyTimesItsLength) {
  Make(absl::Milliseconds(50));
  flows_ = 1;
  EXPECT_TRUE(Shows(1));
  EXPECT_EQ(builds_, 1);
  flows_ = 2;
  clock_.Advance(absl::Milliseconds(999));  // Within 20 x 50 ms of its end.
  EXPECT_TRUE(Shows(1));
  EXPECT_EQ(builds_, 1);
  clock_.Advance(absl::Milliseconds(1));  // 1 s after it ended: built again.
  EXPECT_TRUE(Shows(2));
  EXPECT_EQ(builds_, 2);
}

TEST_F(ScrapeReuseTest, AQuickBuildIsNeverServedAgain) {
  Make(absl::Milliseconds(9));
  for (int n = 1; n <= 5; ++n) {
    flows_ = n;
    EXPECT_TRUE(Shows(n));
    EXPECT_EQ(builds_, n);
  }
}

TEST_F(ScrapeReuseTest, TimeThatDoesNotMoveNeverServesAnOldBuild) {
  // A test's manual clock that nobody advances: every build takes no time on
  // it, however long it took on the machine (CI's flow-alert test once read
  // a stale exposition so), and so is built afresh.
  Make(absl::ZeroDuration());
  flows_ = 7;
  EXPECT_TRUE(Shows(7));
  flows_ = 8;
  EXPECT_TRUE(Shows(8));
  EXPECT_EQ(builds_, 2);
}

TEST_F(ScrapeReuseTest, AZeroThresholdBuildsEveryScrapeAfresh) {
  // --metrics_reuse_threshold=0, as the wire tests run the binary.
  Make(absl::Seconds(1), absl::ZeroDuration());
  for (int n = 1; n <= 3; ++n) {
    flows_ = n;
    EXPECT_TRUE(Shows(n));
    EXPECT_EQ(builds_, n);
  }
}

}  // namespace
}  // namespace metasrv::server
