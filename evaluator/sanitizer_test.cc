// Deep mode without a GPU: the sanitizer command line, reading its output into a verdict, and
// an evaluation that cannot run saying so for every tool.
#include "evaluator/sanitizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "evaluator/evaluator.h"
#include "problems/problems.h"

namespace ws {
namespace {

namespace fs = std::filesystem;

// The value after `flag` in argv, or "" when absent.
std::string After(const std::vector<std::string>& argv, const std::string& flag) {
  auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

std::vector<std::string> Filters(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "--kernel-name") out.push_back(argv[i + 1]);
  }
  return out;
}

const std::vector<std::string> kRunner = {"/b/ws_runner", "run", "/s/deep-memcheck.job.json"};

TEST(SanitizerArgvTest, MemcheckWrapsTheRunnerAndChecksOnlyThePlansKernels) {
  auto argv = SanitizerArgv("/opt/cuda/compute-sanitizer/compute-sanitizer",
                            SanitizerTool::kMemcheck, {"quantize", "scales", "quantize"}, kRunner);
  ASSERT_GE(argv.size(), kRunner.size() + 2);
  EXPECT_EQ(argv.front(), "/opt/cuda/compute-sanitizer/compute-sanitizer");
  EXPECT_EQ(After(argv, "--tool"), "memcheck");
  EXPECT_EQ(After(argv, "--error-exitcode"), "99");
  EXPECT_EQ(After(argv, "--print-limit"), "20");
  EXPECT_EQ(After(argv, "--launch-timeout"), "0");
  EXPECT_EQ(After(argv, "--check-device-heap"), "yes");
  EXPECT_EQ(After(argv, "--report-api-errors"), "no");
  EXPECT_EQ(After(argv, "--check-exit-code"), "no");
  EXPECT_EQ(After(argv, "--target-processes"), "application-only");
  // Each kernel once, by its exact name.
  EXPECT_EQ(Filters(argv), (std::vector<std::string>{"kne=quantize", "kne=scales"}));
  // The runner's argv comes last, after "--", unchanged.
  std::vector<std::string> tail(argv.end() - static_cast<long>(kRunner.size()), argv.end());
  EXPECT_EQ(tail, kRunner);
  EXPECT_EQ(*(argv.end() - static_cast<long>(kRunner.size()) - 1), "--");
  // Only options that exist for this tool.
  EXPECT_EQ(After(argv, "--racecheck-report"), "");
  EXPECT_EQ(After(argv, "--initcheck-address-space"), "");
}

TEST(SanitizerArgvTest, RacecheckAndInitcheckOptions) {
  auto race = SanitizerArgv("cs", SanitizerTool::kRacecheck, {"k"}, kRunner);
  EXPECT_EQ(After(race, "--tool"), "racecheck");
  EXPECT_EQ(After(race, "--racecheck-report"), "analysis");
  EXPECT_EQ(After(race, "--check-device-heap"), "");
  EXPECT_EQ(Filters(race), std::vector<std::string>{"kne=k"});

  auto init = SanitizerArgv("cs", SanitizerTool::kInitcheck, {"k"}, kRunner);
  EXPECT_EQ(After(init, "--tool"), "initcheck");
  EXPECT_EQ(After(init, "--check-api-memory-access"), "yes");
  // CUDA 13's sanitizer rejects the old address-space option.
  EXPECT_EQ(After(init, "--initcheck-address-space"), "");
  EXPECT_EQ(After(init, "--error-exitcode"), "99");
  // initcheck must see the trusted helpers' writes: no kernel filter.
  EXPECT_TRUE(Filters(init).empty());
}

TEST(SanitizerArgvTest, ReadOnlyPathsAndEnvironment) {
  EXPECT_TRUE(SanitizerReadOnlyPaths("/usr/local/cuda-13.0/compute-sanitizer/compute-sanitizer")
                  .empty());
  EXPECT_EQ(SanitizerReadOnlyPaths("/opt/cuda/compute-sanitizer/compute-sanitizer"),
            std::vector<std::string>{"/opt/cuda/compute-sanitizer"});
  auto env = SanitizerEnv();
  ASSERT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0].first, "NV_COMPUTE_SANITIZER_LOCAL_CONNECTION_OVERRIDE");
  EXPECT_EQ(env[0].second, "uds");
}

TEST(SanitizerArgvTest, FindHonoursTheEnvironmentVariable) {
  const std::string dir = testing::TempDir() + "/ws_cs_" + std::to_string(::getpid());
  fs::create_directories(dir);
  const std::string fake = dir + "/compute-sanitizer";
  std::ofstream(fake) << "#!/bin/sh\n";
  fs::permissions(fake, fs::perms::owner_all);
  ::setenv("WARPSMITH_COMPUTE_SANITIZER", fake.c_str(), 1);
  auto found = FindComputeSanitizer();
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(*found, fs::canonical(fake).string());
  ::setenv("WARPSMITH_COMPUTE_SANITIZER", (dir + "/missing").c_str(), 1);
  EXPECT_FALSE(FindComputeSanitizer().ok());
  ::unsetenv("WARPSMITH_COMPUTE_SANITIZER");
  fs::remove_all(dir);
}

// ---- Reading the output -------------------------------------------------------------------------

constexpr char kMemcheckClean[] = R"(========= COMPUTE-SANITIZER
========= ERROR SUMMARY: 0 errors
)";

constexpr char kMemcheckOutOfBounds[] = R"(========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 1 bytes
=========     at quantize+0x3f0 in kernel.cu:88
=========     by thread (255,0,0) in block (4095,0,0)
=========     Address 0x7f2a3e000400 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f2a3dc00000 of size 4194304 bytes
=========
========= Invalid __global__ write of size 1 bytes
=========     at quantize+0x3f0 in kernel.cu:88
=========     by thread (254,0,0) in block (4095,0,0)
=========     Address 0x7f2a3e0003ff is out of bounds
=========
ws_runner: case deep-test-0: crashed
========= ERROR SUMMARY: 2 errors
)";

constexpr char kRacecheckClean[] = R"(========= COMPUTE-SANITIZER
========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)
)";

constexpr char kRacecheckHazards[] = R"(========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at racy_scales+0x2a0 in racy.cu:41
=========     and Write access at racy_scales+0x2a0 in racy.cu:41 [3 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
)";

// Racecheck with warnings only (warp-synchronous shared memory use): still hazards.
constexpr char kRacecheckWarnings[] = R"(========= COMPUTE-SANITIZER
========= Warning: Race reported between Read access at reduce()+0x130 in r.cu:12
=========     and Write access at reduce()+0x150 in r.cu:13 [32 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)
)";

constexpr char kInitcheckCandidate[] = R"(========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at quantize+0x1b0 in kernel.cu:40
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f1c8e200000
=========
========= ERROR SUMMARY: 1 error
)";

// A finding in a trusted helper kernel is the evaluator's problem, not the candidate's.
constexpr char kInitcheckHelper[] = R"(========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 8 bytes
=========     at ws_hash+0x90
=========     by thread (3,0,0) in block (0,0,0)
=========     Address 0x7f1c8e200010
=========
========= ERROR SUMMARY: 1 error
)";

// A device-library function inlined in a candidate's kernel prints demangled, with its return
// type, and names no plan kernel: still the candidate's finding, not the evaluator's.
constexpr char kInitcheckLibrary[] =
    "========= COMPUTE-SANITIZER\n"
    "========= Uninitialized __global__ memory read of size 16 bytes\n"
    "=========     at void ws::mx::ScaleGather<(int)128, (int)4, (bool)1>::run<(bool)0>"
    "(const unsigned char *, unsigned char *, long long, long long)+0x750 in mx_dual_tile.cuh:609\n"
    "=========     by thread (0,0,0) in block (5,0,0)\n"
    "=========     Address 0x7f1c8e200000\n"
    "=========\n"
    "========= ERROR SUMMARY: 1 error\n";

// Racecheck in a library function that returns a value: the candidate's hazard.
constexpr char kRacecheckLibrary[] =
    "========= COMPUTE-SANITIZER\n"
    "========= Error: Race reported between Write access at unsigned int "
    "ws::mx::pack<(int)2, 4>(float, float)+0x40 in mx.cuh:9\n"
    "=========     and Read access at unsigned int ws::mx::pack<(int)2, 4>(float, float)+0x60 "
    "in mx.cuh:9 [2 hazards]\n"
    "=========\n"
    "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n";

// A helper in the candidate's anonymous namespace, inlined in its kernel: the candidate's.
constexpr char kInitcheckAnonymousHelper[] =
    "========= COMPUTE-SANITIZER\n"
    "========= Uninitialized __global__ memory read of size 4 bytes\n"
    "=========     at void (anonymous namespace)::unit<(int)4>(const unsigned char *, int)"
    "+0x1c0 in kernel.cu:270\n"
    "=========     by thread (0,0,0) in block (1,0,0)\n"
    "=========\n"
    "========= ERROR SUMMARY: 1 error\n";

// An uninitialized read through a runner API call (a copy of a dump) names no kernel.
constexpr char kInitcheckApiCopy[] = R"(========= COMPUTE-SANITIZER
========= Host API uninitialized memory access
=========     Uninitialized access at 0x7f1c8e200000 on access by cudaMemcopy source.
=========
========= ERROR SUMMARY: 1 error
)";

constexpr char kNoAttach[] = R"(========= COMPUTE-SANITIZER
========= Error: No attachable process found. compute-sanitizer timed-out.
========= Default timeout can be adjusted with --launch-timeout. Awaiting target completion.
)";

constexpr char kDriverRefuses[] = R"(========= COMPUTE-SANITIZER
ws_runner: CUDA_ERROR_NOT_SUPPORTED: cuInit
========= Error: Target application terminated before first instrumented API call
========= ERROR SUMMARY: 0 errors
)";

struct ParseCase {
  const char* name;
  SanitizerTool tool;
  bool exited;
  int exit_code;
  const char* output;
  SanitizerOutcome::State state;
  std::string text;        // SanitizerOutcome::Text(), or a prefix of it for kUnavailable
  std::string in_message;  // a piece of Message() ("" to skip)
};

TEST(ParseSanitizerOutputTest, TableOfRealisticOutputs) {
  using S = SanitizerOutcome::State;
  const SanitizerTool mem = SanitizerTool::kMemcheck, race = SanitizerTool::kRacecheck,
                      init = SanitizerTool::kInitcheck;
  const ParseCase cases[] = {
      {"memcheck clean", mem, true, 0, kMemcheckClean, S::kClean, "clean", ""},
      {"memcheck out of bounds", mem, true, 4, kMemcheckOutOfBounds, S::kFindings, "2 errors",
       "memcheck: 2 errors: Invalid __global__ write of size 1 bytes at quantize+0x3f0"},
      {"exit 99 counts even without a summary", mem, true, 99, "========= COMPUTE-SANITIZER\n",
       S::kFindings, "findings (exit status 99)", ""},
      {"racecheck clean", race, true, 0, kRacecheckClean, S::kClean, "clean", ""},
      {"racecheck hazards", race, true, 99, kRacecheckHazards, S::kFindings, "1 hazard",
       "racecheck: 1 hazard: Error: Race reported between Write access at racy_scales+0x2a0"},
      {"racecheck warnings are hazards", race, true, 0, kRacecheckWarnings, S::kFindings,
       "1 hazard", "Race reported between Read access at reduce()"},
      {"initcheck in the candidate", init, true, 99, kInitcheckCandidate, S::kFindings, "1 error",
       "initcheck: 1 error: Uninitialized __global__ memory read of size 4 bytes at quantize"},
      {"initcheck in a helper kernel", init, true, 99, kInitcheckHelper, S::kUnavailable,
       "unavailable: initcheck flagged the evaluator's own code", "at ws_hash+0x90"},
      {"initcheck in an inlined library function", init, true, 99, kInitcheckLibrary,
       S::kFindings, "1 error", "at void ws::mx::ScaleGather<(int)128"},
      {"racecheck in a library function", race, true, 99, kRacecheckLibrary, S::kFindings,
       "1 hazard", "at unsigned int ws::mx::pack"},
      {"initcheck in an anonymous-namespace helper", init, true, 99, kInitcheckAnonymousHelper,
       S::kFindings, "1 error", "(anonymous namespace)::unit"},
      {"initcheck in a runner API call", init, true, 99, kInitcheckApiCopy, S::kUnavailable,
       "unavailable: initcheck flagged the evaluator's own code", "Host API"},
      {"no attach", mem, true, 0, kNoAttach, S::kUnavailable,
       "unavailable: memcheck gave no error summary", "No attachable process found"},
      {"driver refuses", race, true, 3, kDriverRefuses, S::kUnavailable,
       "unavailable: the runner failed under racecheck (exit status 3)",
       "terminated before first instrumented API call"},
      {"killed", init, false, -1, "", S::kUnavailable,
       "unavailable: initcheck was killed by a signal", ""},
      {"not installed (exec failed)", mem, true, 127,
       "bwrap: execvp /usr/local/cuda/bin/compute-sanitizer: No such file or directory\n",
       S::kUnavailable, "unavailable: memcheck gave no error summary (exit status 127)",
       "No such file or directory"},
  };
  const std::set<std::string> kernels = {"quantize", "racy_scales", "reduce"};
  for (const ParseCase& c : cases) {
    SCOPED_TRACE(c.name);
    SanitizerOutcome o = ParseSanitizerOutput(c.tool, c.exited, c.exit_code, c.output, kernels);
    EXPECT_EQ(o.state, c.state) << o.Text();
    if (c.state == S::kUnavailable) {
      EXPECT_EQ(o.Text().rfind(c.text, 0), 0u) << o.Text();
      if (!c.in_message.empty()) {
        EXPECT_NE(o.Text().find(c.in_message), std::string::npos) << o.Text();
      }
    } else {
      EXPECT_EQ(o.Text(), c.text);
      if (!c.in_message.empty()) {
        EXPECT_NE(o.Message(c.tool).find(c.in_message), std::string::npos) << o.Message(c.tool);
      }
    }
  }
}

TEST(ParseSanitizerOutputTest, FindingsNamePerToolUnitsAndKeepTheFirstFew) {
  std::string many = "========= COMPUTE-SANITIZER\n";
  for (int i = 0; i < 6; ++i) {
    many += fmt::format("========= Invalid __shared__ read of size 4 bytes\n"
                        "=========     at quantize+0x{:x} in kernel.cu:{}\n",
                        0x100 + i, 10 + i);
  }
  many += "========= ERROR SUMMARY: 27 errors\n";
  SanitizerOutcome o =
      ParseSanitizerOutput(SanitizerTool::kMemcheck, true, 99, many, {"quantize"});
  EXPECT_EQ(o.state, SanitizerOutcome::State::kFindings);
  EXPECT_EQ(o.count, 27);
  EXPECT_EQ(o.Text(), "27 errors");
  EXPECT_EQ(o.findings.size(), 3u);
  // Candidate and helper findings together: only the candidate's are counted.
  std::string mixed = std::string(kInitcheckCandidate) + kInitcheckHelper;
  o = ParseSanitizerOutput(SanitizerTool::kInitcheck, true, 99, mixed, {"quantize"});
  EXPECT_EQ(o.state, SanitizerOutcome::State::kFindings);
  EXPECT_EQ(o.Text(), "1 error");
}

// ---- Evaluate in deep mode where nothing can run ------------------------------------------------

std::string ReadText(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class DeepEvalTest : public testing::Test {
 protected:
  void SetUp() override {
    auto s = LoadProblem(std::string(WS_SOURCE_DIR) + "/problems/mxfp8_quantize_rowwise/spec.json");
    ASSERT_TRUE(s.ok()) << s.status().message();
    spec_ = std::move(*s);
    opts_.workspace = testing::TempDir() + "/ws_deep_" + std::to_string(::getpid());
    opts_.runner = std::string(WS_BINARY_DIR) + "/ws_runner";
    opts_.compile_worker = std::string(WS_BINARY_DIR) + "/ws_compile";
  }
  void TearDown() override { fs::remove_all(opts_.workspace); }

  EvalRequest Request() {
    EvalRequest req;
    req.spec = &spec_;
    req.source =
        ReadText(std::string(WS_SOURCE_DIR) + "/kernels/mxfp8_quantize_rowwise/kernel.cu");
    req.params = {{"rounding", "rceil"}};
    req.deep = true;
    return req;
  }

  void ExpectEveryTool(const EvalResult& r, const std::string& state) {
    ASSERT_EQ(r.deep.size(), 3u);
    for (const char* tool : {"memcheck", "racecheck", "initcheck"}) {
      ASSERT_TRUE(r.deep.count(tool)) << tool;
      EXPECT_EQ(r.deep.at(tool), state) << tool;
    }
    EXPECT_EQ(DeepModeFailure(r), "");
  }

  ProblemSpec spec_;
  EvaluatorOptions opts_;
};

TEST_F(DeepEvalTest, WithoutAGpuDeepModeSaysItWasNotRun) {
  if (fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "this machine has a GPU";
  auto r = Evaluate(Request(), opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kNotRun) << r->message;
  EXPECT_FALSE(r->ran_on_gpu);
  ExpectEveryTool(*r, "not run: no GPU");
}

TEST_F(DeepEvalTest, CompileOnlyAndOtherArchitecturesAreNotRunEither) {
  EvalRequest req = Request();
  req.compile_only = true;
  auto r = Evaluate(req, opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kNotRun);
  ExpectEveryTool(*r, "not run: compile only");

  req = Request();
  DeviceInfo blackwell;
  blackwell.name = "NVIDIA B200";
  blackwell.arch = "sm_100a";
  blackwell.num_sms = 148;
  req.device = blackwell;  // the candidate is compiled for sm_90a
  r = Evaluate(req, opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kNotRun);
  ExpectEveryTool(*r, "not run: no sm_90a GPU");

  req = Request();
  req.source = "/* warpsmith:plan { \"launch\": [] } */";
  r = Evaluate(req, opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kPlanError);
  ExpectEveryTool(*r, "not run: the verdict is plan_error");
}

TEST_F(DeepEvalTest, WithoutDeepModeThereIsNoDeepRecord) {
  EvalRequest req = Request();
  req.deep = false;
  req.compile_only = true;
  auto r = Evaluate(req, opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->deep.empty());
}

TEST(DeepModeFailureTest, NamesTheFirstUnavailableTool) {
  EvalResult r;
  EXPECT_EQ(DeepModeFailure(r), "");
  r.deep = {{"memcheck", "clean"}, {"racecheck", "unavailable: no attach"},
            {"initcheck", "not run: racecheck was unavailable"}};
  EXPECT_EQ(DeepModeFailure(r), "racecheck: unavailable: no attach");
}

}  // namespace
}  // namespace ws
