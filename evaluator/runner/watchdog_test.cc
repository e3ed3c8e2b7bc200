#include "evaluator/runner/watchdog.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/files.h"
#include "evaluator/runner/commands.h"

namespace ws::runner {
namespace {

using namespace std::chrono_literals;
using ojson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// What the expiry callback saw, for a test that does not end the process.
struct Expired {
  std::mutex mu;
  std::vector<std::pair<std::string, double>> calls;
  Clock::time_point at;
  size_t Count() {
    std::lock_guard<std::mutex> lock(mu);
    return calls.size();
  }
};

CaseWatchdog::Expiry Record(Expired* e) {
  return [e](const std::string& id, double allowance_s) {
    std::lock_guard<std::mutex> lock(e->mu);
    e->calls.emplace_back(id, allowance_s);
    e->at = Clock::now();
  };
}

TEST(CaseWatchdogTest, ExpiresAfterTheAllowancePlusGraceOnce) {
  Expired e;
  CaseWatchdog wd(0.1, Record(&e));
  const auto start = Clock::now();
  wd.Arm("test-3", 0.2);
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(e.Count(), 0u) << "fired before the allowance";
  std::this_thread::sleep_for(650ms);
  ASSERT_EQ(e.Count(), 1u);
  EXPECT_EQ(e.calls[0].first, "test-3");
  EXPECT_DOUBLE_EQ(e.calls[0].second, 0.2);
  EXPECT_GE(e.at - start, 300ms);
  EXPECT_LT(e.at - start, 700ms);
}

TEST(CaseWatchdogTest, DisarmedAndReArmedCasesDoNotExpire) {
  Expired e;
  CaseWatchdog wd(0.05, Record(&e));
  for (int i = 0; i < 5; ++i) {
    wd.Arm("case-" + std::to_string(i), 0.1);
    std::this_thread::sleep_for(40ms);
    wd.Disarm();
  }
  // Re-arming restarts the clock: each case alone stays under its allowance.
  for (int i = 0; i < 5; ++i) {
    wd.Arm("again-" + std::to_string(i), 0.1);
    std::this_thread::sleep_for(60ms);
  }
  wd.Disarm();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(e.Count(), 0u);
  // A later case still expires, under its own id.
  wd.Arm("late", 0.05);
  std::this_thread::sleep_for(400ms);
  ASSERT_EQ(e.Count(), 1u);
  EXPECT_EQ(e.calls[0].first, "late");
}

TEST(CaseWatchdogTest, DestroyingAnArmedWatchdogDoesNotFire) {
  Expired e;
  {
    CaseWatchdog wd(0.05, Record(&e));
    wd.Arm("a", 0.05);
  }
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(e.Count(), 0u);
}

// Disarm waits for an expiry in progress: after it returns, the main thread never races the
// watchdog's write of the same case.
TEST(CaseWatchdogTest, DisarmWaitsForARunningExpiry) {
  std::atomic<bool> in_expiry{false}, expiry_done{false};
  CaseWatchdog wd(0, [&](const std::string&, double) {
    in_expiry = true;
    std::this_thread::sleep_for(200ms);
    expiry_done = true;
  });
  wd.Arm("slow", 0.01);
  while (!in_expiry) std::this_thread::sleep_for(1ms);
  wd.Disarm();
  EXPECT_TRUE(expiry_done);
}

std::string TempPath(const std::string& name) {
  return testing::TempDir() + "/ws_watchdog_" + std::to_string(::getpid()) + "_" + name;
}

TEST(ResultFileTest, AppendsAndRewritesWhole) {
  const std::string path = TempPath("result.json");
  ResultFile f(path, ojson{{"name", "gpu"}});
  ASSERT_TRUE(f.Write().ok());
  auto text = ReadFile(path);
  ASSERT_TRUE(text.ok());
  ojson j = ojson::parse(*text);
  EXPECT_EQ(j["device"]["name"], "gpu");
  EXPECT_TRUE(j["cases"].empty());
  ASSERT_TRUE(f.Append({{"id", "a"}, {"status", "ok"}}).ok());
  ASSERT_TRUE(f.Append(TimeoutCaseResult("b", 5, 2)).ok());
  j = ojson::parse(*ReadFile(path));
  ASSERT_EQ(j["cases"].size(), 2u);
  EXPECT_EQ(j["cases"][1]["id"], "b");
  EXPECT_EQ(j["cases"][1]["status"], "timeout");
  EXPECT_EQ(j["cases"][1]["budget_s"], 5.0);
  EXPECT_NE(j["cases"][1]["message"].get<std::string>().find("within its 5 s allowance"),
            std::string::npos)
      << j["cases"][1]["message"];
  EXPECT_EQ(f.Snapshot(), j);
  std::filesystem::remove(path);
}

TEST(ResultFileTest, SetWritesAFieldButNeverTheDeviceOrCases) {
  const std::string path = TempPath("set.json");
  ResultFile f(path, ojson{{"name", "gpu"}});
  ASSERT_TRUE(f.Append({{"id", "a"}, {"status", "ok"}}).ok());
  ASSERT_TRUE(f.Set("seconds", {{"startup", 0.5}, {"gpu_wait", 1.25}}).ok());
  ojson j = ojson::parse(*ReadFile(path));
  EXPECT_EQ(j["seconds"]["gpu_wait"], 1.25);
  EXPECT_EQ(j["cases"].size(), 1u);
  EXPECT_FALSE(f.Set("cases", ojson::array()).ok());
  EXPECT_FALSE(f.Set("device", ojson::object()).ok());
  j = ojson::parse(*ReadFile(path));
  EXPECT_EQ(j["cases"].size(), 1u);
  EXPECT_EQ(j["device"]["name"], "gpu");
  std::filesystem::remove(path);
}

// Many appends from two threads: every one lands, and the file always parses.
TEST(ResultFileTest, ConcurrentAppendsAllLand) {
  const std::string path = TempPath("concurrent.json");
  ResultFile f(path, ojson::object());
  auto writer = [&](const std::string& prefix) {
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(f.Append({{"id", prefix + std::to_string(i)}}).ok());
  };
  std::thread a(writer, "a"), b(writer, "b");
  a.join();
  b.join();
  ojson j = ojson::parse(*ReadFile(path));
  EXPECT_EQ(j["cases"].size(), 100u);
  std::filesystem::remove(path);
}

// The runner's expiry: the stopped case is in the file, after the finished ones, and the process
// ends with kExitCaseTimeout while its main thread is still busy.
TEST(CaseWatchdogDeathTest, StopsTheProcessWithTheTimeoutStatus) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // No pid in the name: the threadsafe style re-runs this test in a fresh process.
  const std::string path = testing::TempDir() + "/ws_watchdog_death_stopped.json";
  std::filesystem::remove(path);
  EXPECT_EXIT(
      {
        ResultFile f(path, ojson::object());
        if (!f.Append({{"id", "test-0"}, {"status", "ok"}}).ok()) std::_Exit(1);
        CaseWatchdog wd(0.05, [&](const std::string& id, double allowance_s) {
          StopCaseAndExit(&f, id, allowance_s, 0.05);
        });
        wd.Arm("test-1", 0.1);
        for (;;) std::this_thread::sleep_for(1s);  // a case that never returns
      },
      testing::ExitedWithCode(kExitCaseTimeout), "case test-1 did not finish within its 0.1 s");
  auto text = ReadFile(path);
  ASSERT_TRUE(text.ok()) << text.status().message();
  ojson j = ojson::parse(*text);
  ASSERT_EQ(j["cases"].size(), 2u);
  EXPECT_EQ(j["cases"][0]["status"], "ok");
  EXPECT_EQ(j["cases"][1]["id"], "test-1");
  EXPECT_EQ(j["cases"][1]["status"], "timeout");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ws::runner
