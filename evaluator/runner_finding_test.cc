// The evaluator's reading of the candidate runner's case results (RunnerCaseFinding) and of a
// case the runner never recorded (MissingCaseFinding): no GPU needed.
#include <optional>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "evaluator/internal.h"
#include "evaluator/runner/commands.h"
#include "sandbox/sandbox.h"

namespace ws {
namespace {

using json = nlohmann::json;

TEST(RunnerCaseFindingTest, MapsEachStatusToItsVerdict) {
  struct Case {
    json result;
    std::optional<Verdict> verdict;  // nullopt: clean
    std::string message;             // a substring of the finding's message
  };
  const Case cases[] = {
      {{{"status", "ok"}, {"guards_intact", true}, {"inputs_unchanged", true}}, std::nullopt, ""},
      {{{"status", "ok"}}, std::nullopt, ""},
      {{{"status", "crashed"}, {"message", "CUDA_ERROR_ILLEGAL_ADDRESS after launch 0"}},
       Verdict::kCrashed, "CUDA_ERROR_ILLEGAL_ADDRESS"},
      {{{"status", "launch_error"}, {"message", "too many resources"}}, Verdict::kCrashed,
       "too many resources"},
      {{{"status", "timeout"},
        {"message", "case test-3 did not finish within its 5 s allowance (stopped after 7 s)"},
        {"budget_s", 5}},
       Verdict::kTimeout, "did not finish within its 5 s allowance"},
      {{{"status", "guard_violation"}, {"message", "output 'q': the guard after it"}},
       Verdict::kWrongAnswer, "wrote outside its output buffers: output 'q'"},
      {{{"status", "ok"}, {"guards_intact", false}}, Verdict::kWrongAnswer,
       "wrote outside its output buffers"},
      {{{"status", "ok"}, {"inputs_unchanged", false}}, Verdict::kWrongAnswer,
       "modified its inputs"},
      {{{"status", "exploded"}, {"message", "?"}}, Verdict::kCrashed, "runner status 'exploded'"},
      {json::object(), Verdict::kCrashed, "runner status ''"},
  };
  for (const Case& c : cases) {
    auto f = RunnerCaseFinding(c.result, 5);
    ASSERT_EQ(f.has_value(), c.verdict.has_value()) << c.result.dump();
    if (!f) continue;
    EXPECT_EQ(f->verdict, *c.verdict) << c.result.dump() << ": " << f->message;
    EXPECT_NE(f->message.find(c.message), std::string::npos) << f->message;
  }
}

// The timeout names the allowance the evaluator gave the case, not the whole run's limit.
TEST(RunnerCaseFindingTest, ATimeoutNamesTheCaseAllowance) {
  const json c = {{"status", "timeout"}, {"message", "case bench-9 did not finish"}};
  for (const auto& [allowance, text] : {std::pair<double, std::string>{5, "its 5 s allowance"},
                                        {0.5, "its 0.5 s allowance"},
                                        {37.6, "its 38 s allowance"},
                                        {150, "its 150 s allowance"}}) {
    auto f = RunnerCaseFinding(c, allowance);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->verdict, Verdict::kTimeout);
    EXPECT_EQ(f->message, "did not finish within " + text);
  }
}

TEST(MissingCaseFindingTest, StoppedRunnersAreTimeoutsAndOthersCrashes) {
  SandboxResult whole;
  whole.timed_out = true;
  whole.signaled = true;
  whole.signal = 9;
  RunnerFinding f = MissingCaseFinding(whole, 95, 5);
  EXPECT_EQ(f.verdict, Verdict::kTimeout);
  EXPECT_EQ(f.message, "did not finish within the limit (95 s for the whole run)");

  // The watchdog stopped the case but the result file could not take it.
  SandboxResult watchdog;
  watchdog.exit_code = runner::kExitCaseTimeout;
  f = MissingCaseFinding(watchdog, 95, 5);
  EXPECT_EQ(f.verdict, Verdict::kTimeout);
  EXPECT_EQ(f.message, "did not finish within its 5 s allowance");

  SandboxResult died;
  died.exit_code = runner::kExitCrashed;
  died.stderr_data = "ws_runner: case test-1 crashed";
  f = MissingCaseFinding(died, 95, 5);
  EXPECT_EQ(f.verdict, Verdict::kCrashed);
  EXPECT_NE(f.message.find("the runner died before finishing this case"), std::string::npos);
  EXPECT_NE(f.message.find("case test-1 crashed"), std::string::npos) << f.message;

  // A signal is never the watchdog's exit status, whatever exit_code holds.
  SandboxResult killed;
  killed.signaled = true;
  killed.signal = 11;
  killed.exit_code = runner::kExitCaseTimeout;
  EXPECT_EQ(MissingCaseFinding(killed, 95, 5).verdict, Verdict::kCrashed);
}

TEST(SecondsTextTest, WholeSecondsAndTenths) {
  EXPECT_EQ(SecondsText(5), "5");
  EXPECT_EQ(SecondsText(0.5), "0.5");
  EXPECT_EQ(SecondsText(2.3), "2.3");
  EXPECT_EQ(SecondsText(12.4), "12");
  EXPECT_EQ(SecondsText(1000), "1000");
}

}  // namespace
}  // namespace ws
