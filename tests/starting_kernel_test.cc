// The agents' and the tuner's starting kernel for mxfp8_quantize_rowwise
// (problems/mxfp8_quantize_rowwise/starting.cu), without a GPU: every combination of its knobs
// compiles for sm_90a through `warpsmith eval --compile-only --knob ...`, so a tuner campaign
// seeded from it never spends an evaluation on a compile error; the expected fast setting also
// compiles for sm_100a and under floor rounding, without stack or spills.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "evaluator/evaluator.h"
#include "problems/problems.h"
#include "sandbox/sandbox.h"

namespace ws {
namespace {

namespace fs = std::filesystem;

const std::string kProblemDir = std::string(WS_SOURCE_DIR) + "/problems/mxfp8_quantize_rowwise";
const std::string kStarting = kProblemDir + "/starting.cu";

using Setting = std::map<std::string, int64_t>;

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

class StartingKernelTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) /
           ("ws_starting_" + std::to_string(::getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ifstream in(kStarting);
    std::stringstream ss;
    ss << in.rdbuf();
    source_ = ss.str();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `warpsmith eval mxfp8_quantize_rowwise starting.cu --compile-only` with one knob setting, in
  // its own workspace (one per worker thread).
  CliRun CompileOnly(const std::string& workspace, const Setting& knobs,
                     const std::vector<std::string>& extra) {
    SandboxSpec spec;
    spec.argv = {std::string(WS_BINARY_DIR) + "/warpsmith",
                 "--workspace",
                 workspace,
                 "--problems-dir",
                 std::string(WS_SOURCE_DIR) + "/problems",
                 "eval",
                 "mxfp8_quantize_rowwise",
                 kStarting,
                 "--compile-only"};
    for (const auto& [k, v] : knobs) {
      spec.argv.push_back("--knob");
      spec.argv.push_back(k + "=" + std::to_string(v));
    }
    spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
    spec.limits.wall_seconds = 300;
    auto r = RunSandboxed(spec);
    if (!r.ok())
      return {-1, "", r.status().message()};
    if (r->signaled)
      return {-1, r->stdout_data, r->Describe()};
    return {r->exit_code, r->stdout_data, r->stderr_data};
  }

  static std::string Text(const Setting& s) {
    std::string t;
    for (const auto& [k, v] : s) t += (t.empty() ? "" : " ") + k + "=" + std::to_string(v);
    return t;
  }

  fs::path dir_;
  std::string source_;
};

// The setting the file's header names as the expected fast one (the hand-tuned kernel's shape).
const Setting kFast = {{"THREADS", 512},
                       {"ELEMS_PER_THREAD", 8},
                       {"VECTOR_BYTES", 16},
                       {"BLOCKS_PER_THREAD", 2},
                       {"CONVERT", 1}};

TEST_F(StartingKernelTest, IsTheProblemsStartingKernelAndItsSpaceIsSmall) {
  auto spec = LoadProblem(kProblemDir + "/spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->starting_kernel, "starting.cu");
  EXPECT_EQ(spec->baseline, "baseline.cu");

  auto plan = ParsePlan(source_);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  int64_t size = 1;
  for (const auto& [_, values] : plan->knobs) size *= static_cast<int64_t>(values.size());
  EXPECT_LE(size, 300) << "the knob space should stay small enough to compile whole";
  EXPECT_GT(size, 64) << "a space this small is enumerated, not searched";
  for (const auto& [name, value] : kFast) {
    ASSERT_TRUE(plan->knobs.contains(name)) << name;
    const auto& values = plan->knobs.at(name);
    EXPECT_NE(std::find(values.begin(), values.end(), value), values.end()) << name;
    EXPECT_NE(values.front(), value) << name << ": the default must be the plain setting";
  }
}

// Every combination of the knobs, for sm_90a (rceil), in parallel over a few CLI processes.
TEST_F(StartingKernelTest, EveryKnobCombinationCompiles) {
  auto plan = ParsePlan(source_);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  std::vector<Setting> all = {{}};
  for (const auto& [name, values] : plan->knobs) {
    std::vector<Setting> next;
    for (const auto& base : all) {
      for (int64_t v : values) {
        Setting s = base;
        s[name] = v;
        next.push_back(s);
      }
    }
    all = std::move(next);
  }
  ASSERT_LE(all.size(), 300u);

  const auto start = std::chrono::steady_clock::now();
  const int workers = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 2u, 8u));
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::vector<std::string> failures;
  size_t fast_seen = 0;
  auto work = [&](int w) {
    const std::string workspace = (dir_ / ("ws" + std::to_string(w))).string();
    for (size_t i; (i = next.fetch_add(1)) < all.size();) {
      CliRun r = CompileOnly(workspace, all[i], {"--arch", "sm_90a"});
      const bool ok = r.exit_code == 0 && r.out.find("not_run") != std::string::npos &&
                      r.out.find("registers") != std::string::npos;
      std::lock_guard<std::mutex> lock(mu);
      if (!ok)
        failures.push_back(Text(all[i]) + ": exit " + std::to_string(r.exit_code) + "\n" + r.out +
                           r.err);
      if (all[i] == kFast)
        ++fast_seen;
    }
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < workers; ++w) pool.emplace_back(work, w);
  work(0);
  for (auto& t : pool) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("compiled %zu knob combinations of starting.cu in %.1f s (%d workers)\n", all.size(),
              seconds, workers);

  EXPECT_EQ(fast_seen, 1u) << "the expected fast setting is in the space";
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << all.size()
                                << " combinations failed; first:\n"
                                << (failures.empty() ? "" : failures.front());
}

// The defaults and the expected fast setting in both rounding modes for both architectures; the
// fast one without stack or spills.
TEST_F(StartingKernelTest, DefaultsAndFastSettingCompileForBothArchitectures) {
  const std::string workspace = (dir_ / "ws").string();
  for (const Setting* knobs : {static_cast<const Setting*>(nullptr), &kFast}) {
    for (std::string arch : {"sm_90a", "sm_100a"}) {
      for (std::string rounding : {"rceil", "floor"}) {
        CliRun r = CompileOnly(workspace, knobs ? *knobs : Setting{},
                               {"--arch", arch, "--set", "rounding=" + rounding});
        const std::string what = (knobs ? Text(*knobs) : "defaults") + " " + arch + " " + rounding;
        EXPECT_EQ(r.exit_code, 0) << what << "\n" << r.out << r.err;
        EXPECT_NE(r.out.find("not_run"), std::string::npos) << what << "\n" << r.out;
        if (knobs) {
          EXPECT_NE(r.out.find("0 B stack, 0 B spilled"), std::string::npos) << what << "\n"
                                                                             << r.out;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ws
