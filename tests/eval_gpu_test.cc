// The evaluator on a real GPU: the hand-tuned kernel passes and is timed; a wrong byte, a write
// past the output, a crash and a kernel that never ends each get their verdict, and the
// evaluator keeps working afterwards. Skips where there is no GPU.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <gtest/gtest.h>

#include "evaluator/evaluator.h"
#include "evaluator/gpu_lock.h"
#include "evaluator/sanitizer.h"
#include "problems/problems.h"

namespace ws {
namespace {

namespace fs = std::filesystem;

std::string ReadText(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Appends a launch to the plan of `source` (before the launch array closes) and its kernel to
// the code, so a test candidate is "the baseline, then this".
std::string WithExtraLaunch(const std::string& source, const std::string& launch_json,
                            const std::string& kernel_code) {
  size_t open = source.find("\"launch\"");
  EXPECT_NE(open, std::string::npos);
  open = source.find('[', open);
  int depth = 0;
  size_t close = open;
  for (; close < source.size(); ++close) {
    if (source[close] == '[') ++depth;
    if (source[close] == ']' && --depth == 0) break;
  }
  return source.substr(0, close) + ", " + launch_json + source.substr(close) + "\n" + kernel_code;
}

class EvalGpuTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto s = LoadProblem(std::string(WS_SOURCE_DIR) + "/problems/mxfp8_quantize_rowwise/spec.json");
    ASSERT_TRUE(s.ok()) << s.status().message();
    spec_ = new ProblemSpec(std::move(*s));
    workspace_ = testing::TempDir() + "/ws_eval_gpu_" + std::to_string(::getpid());
  }
  static void TearDownTestSuite() {
    delete spec_;
    fs::remove_all(workspace_);
  }

  void SetUp() override {
    opts_.workspace = workspace_;
    opts_.runner = std::string(WS_BINARY_DIR) + "/ws_runner";
    opts_.compile_worker = std::string(WS_BINARY_DIR) + "/ws_compile";
    std::string why;
    auto device = ProbeDevice(opts_, &why);
    ASSERT_TRUE(device.ok()) << device.status().message();
    if (!*device) GTEST_SKIP() << "no GPU here (" << why << "); GPU tests skipped";
    device_ = **device;
  }

  EvalRequest Request(const std::string& source) {
    EvalRequest req;
    req.spec = spec_;
    req.source = source;
    req.arch = Arch::kSm90a;
    req.params = {{"rounding", "rceil"}};
    req.device = device_;
    return req;
  }

  std::string Baseline() { return ReadText(spec_->dir + "/" + spec_->baseline); }

  // After a hung or crashed candidate, the GPU and the evaluator still serve the next one.
  void ExpectTheNextEvaluationWorks() {
    EvalRequest next = Request(Baseline());
    next.time_bench = false;
    auto r = Evaluate(next, opts_);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->verdict, Verdict::kOk) << r->message;
  }

  static ProblemSpec* spec_;
  static std::string workspace_;
  EvaluatorOptions opts_;
  DeviceInfo device_;
};

ProblemSpec* EvalGpuTest::spec_ = nullptr;
std::string EvalGpuTest::workspace_;

TEST_F(EvalGpuTest, HandTunedKernelIsOkAndTimedInBothModes) {
  auto ceilings = MeasureCeilings(opts_);
  ASSERT_TRUE(ceilings.ok()) << ceilings.status().message();
  EXPECT_GT(ceilings->copy_bytes_per_s, 1e12);
  for (std::string rounding : {"rceil", "floor"}) {
    EvalRequest req =
        Request(ReadText(std::string(WS_SOURCE_DIR) + "/kernels/mxfp8_quantize_rowwise/kernel.cu"));
    req.params = {{"rounding", rounding}};
    req.ceilings = *ceilings;
    auto r = Evaluate(req, opts_);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->verdict, Verdict::kOk) << r->message;
    EXPECT_TRUE(r->ran_on_gpu);
    int timed = 0;
    for (const auto& c : r->cases) {
      EXPECT_EQ(c.verdict, Verdict::kOk) << c.message;
      if (c.kind == "bench") {
        ASSERT_TRUE(c.timing.has_value());
        EXPECT_GT(c.timing->median_us, 0);
        EXPECT_GT(c.sol_us, 0);
        ++timed;
      }
    }
    EXPECT_EQ(timed, 4);
    EXPECT_GT(r->sol_fraction, 0.3) << "far slower than expected for a memory-bound kernel";
  }
}

// The judge itself: the trusted GPU reference agrees with the CPU reference byte for byte on
// device-generated inputs (special values included), in both rounding modes.
TEST_F(EvalGpuTest, GpuReferenceMatchesTheCpuReference) {
  for (std::string rounding : {"rceil", "floor"}) {
    auto shapes = VerifyGpuReference(*spec_, {{"rounding", rounding}}, Arch::kSm90a, device_, opts_);
    ASSERT_TRUE(shapes.ok()) << rounding << ": " << shapes.status().message();
    EXPECT_EQ(shapes->size(), spec_->test_shapes.size() + spec_->hidden_shapes.size() + 1);
  }
}

TEST_F(EvalGpuTest, OneWrongByteIsAWrongAnswerNamingTheElement) {
  std::string src = WithExtraLaunch(
      Baseline(),
      R"({ "kernel": "ws_test_flip", "grid": [1], "block": [1], "args": ["q", {"i64": "M * K / 2 + 7"}] })",
      "extern \"C\" __global__ void ws_test_flip(unsigned char* q, long long i) { q[i] ^= 1; }\n");
  EvalRequest req = Request(src);
  req.time_bench = false;
  auto r = Evaluate(req, opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kWrongAnswer) << r->message;
  EXPECT_NE(r->message.find("q["), std::string::npos) << r->message;
  EXPECT_NE(r->message.find("1 of"), std::string::npos) << r->message;
}

// On bench shapes exact outputs are compared as keyed digests: one wrong byte there (and only
// there) is a wrong answer naming the bench shape, the output and the run, and the re-run with
// full dumps names the element.
TEST_F(EvalGpuTest, OneWrongByteOnABenchShapeIsCaughtByTheDigest) {
  // The bench shapes: 16384 x 2880, and the three with M * K > 2^27; no test or hidden shape is
  // either (the largest test shape, 23302 x 2880, is 64M elements and a bit).
  std::string src = WithExtraLaunch(
      Baseline(),
      R"({ "kernel": "ws_test_flip_big", "grid": [1], "block": [1],
           "args": ["q", {"i64": "M * K"}] })",
      "extern \"C\" __global__ void ws_test_flip_big(unsigned char* q, long long n) {\n"
      "  if (n == 16384ll * 2880 || n > (1ll << 27)) q[n / 2 + 7] ^= 1;\n}\n");
  EvalRequest req = Request(src);
  req.time_bench = false;
  auto r = Evaluate(req, opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kWrongAnswer) << r->message;
  EXPECT_EQ(r->message.rfind("bench shape", 0), 0u) << r->message;
  EXPECT_NE(r->message.find("in the check run"), std::string::npos) << r->message;
  EXPECT_NE(r->message.find("q["), std::string::npos) << r->message;
  EXPECT_NE(r->message.find("1 of"), std::string::npos) << r->message;
  EXPECT_GT(r->phase_seconds.count("digest_rerun"), 0u);
  for (const auto& c : r->cases) {
    if (c.kind != "bench") {
      EXPECT_EQ(c.verdict, Verdict::kOk) << c.message;
    }
  }
}

// keep_scratch keeps the runners' job files (to re-run a candidate's job under a profiler) and
// says where; by default nothing is left behind.
TEST_F(EvalGpuTest, KeptScratchHoldsTheRunnersJobs) {
  EvalRequest req = Request(Baseline());
  req.time_bench = false;
  req.include_bench = false;
  auto plain = Evaluate(req, opts_);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->kept_scratch, "");
  EvaluatorOptions keep = opts_;
  keep.keep_scratch = true;
  auto r = Evaluate(req, keep);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kOk) << r->message;
  ASSERT_NE(r->kept_scratch, "");
  EXPECT_TRUE(fs::exists(r->kept_scratch + "/candidate.job.json"));
  EXPECT_TRUE(fs::exists(r->kept_scratch + "/reference.job.json"));
  std::error_code ec;
  fs::remove_all(r->kept_scratch, ec);
}

// A plan of several launches is timed as CUDA-graph replays, and the audited run still checks.
TEST_F(EvalGpuTest, MultiLaunchPlansAreTimedAsGraphs) {
  std::string src = WithExtraLaunch(
      Baseline(), R"({ "kernel": "ws_test_noop", "grid": [1], "block": [32], "args": [] })",
      "extern \"C\" __global__ void ws_test_noop() {}\n");
  EvalRequest req = Request(src);
  auto r = Evaluate(req, opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kOk) << r->message;
  int timed = 0;
  for (const auto& c : r->cases) {
    if (!c.timing) continue;
    EXPECT_TRUE(c.timing->graph);
    EXPECT_GT(c.timing->median_us, 0);
    ++timed;
  }
  EXPECT_EQ(timed, static_cast<int>(spec_->bench_shapes.size()));
}

TEST_F(EvalGpuTest, WritingPastTheOutputIsCaught) {
  std::string src = WithExtraLaunch(
      Baseline(),
      R"({ "kernel": "ws_test_overrun", "grid": [1], "block": [32], "args": ["scales", {"i64": "M * K / 32"}] })",
      "extern \"C\" __global__ void ws_test_overrun(unsigned char* s, long long n) {\n"
      "  s[n + threadIdx.x] = 0x42;\n}\n");
  EvalRequest req = Request(src);
  req.time_bench = false;
  auto r = Evaluate(req, opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kWrongAnswer) << r->message;
  EXPECT_NE(r->message.find("outside"), std::string::npos) << r->message;
}

TEST_F(EvalGpuTest, AWildPointerCrashesOnlyTheRunner) {
  std::string src = WithExtraLaunch(
      Baseline(), R"({ "kernel": "ws_test_wild", "grid": [1], "block": [1], "args": [] })",
      "extern \"C\" __global__ void ws_test_wild() {\n"
      "  *reinterpret_cast<volatile int*>(0x10) = 1;\n}\n");
  EvalRequest req = Request(src);
  req.time_bench = false;
  auto r = Evaluate(req, opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kCrashed) << r->message;
}

TEST_F(EvalGpuTest, AKernelThatNeverEndsTimesOutAndTheNextEvaluationWorks) {
  std::string src = R"P(/* warpsmith:plan
{ "launch": [ { "kernel": "ws_test_spin", "grid": [1], "block": [32], "args": ["q"] } ] }
*/
extern "C" __global__ void ws_test_spin(volatile unsigned char* q) {
  while (q[0] != 0xAB || q[0] == 0xAB) { }
}
)P";
  EvaluatorOptions quick = opts_;
  quick.startup_timeout_s = 15;
  quick.case_timeout_s = 1;
  EvalRequest req = Request(src);
  req.time_bench = false;
  req.include_hidden = false;
  auto r = Evaluate(req, quick);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kTimeout) << r->message;

  ExpectTheNextEvaluationWorks();
}

// The runner's watchdog stops a case that hangs at about its own allowance (budget_s + a grace),
// not at the whole run's limit: the cases before it keep their verdicts, the evaluation ends
// well within startup + 3 allowances, and the GPU is usable by the next evaluation.
TEST_F(EvalGpuTest, AHangCostsItsCaseAllowanceNotTheWholeRun) {
  // Only the last test shape has the largest M (bench shapes too, but they come after it).
  const int64_t m_last = spec_->test_shapes.back().symbols.at("M");
  for (size_t i = 0; i + 1 < spec_->test_shapes.size(); ++i) {
    ASSERT_LT(spec_->test_shapes[i].symbols.at("M"), m_last) << "test shape " << i;
  }
  std::string src = WithExtraLaunch(
      Baseline(),
      R"({ "kernel": "ws_test_spin_big", "grid": [1], "block": [32], "args": ["q", {"i64": "M"}] })",
      "extern \"C\" __global__ void ws_test_spin_big(volatile unsigned char* q, long long m) {\n"
      "  if (m < " + std::to_string(m_last) + ") return;\n"
      "  while (q[0] != 0xAB || q[0] == 0xAB) { }\n}\n");
  EvaluatorOptions quick = opts_;
  quick.startup_timeout_s = 15;
  quick.case_timeout_s = 2;
  EvalRequest req = Request(src);
  req.time_bench = false;
  req.include_hidden = false;
  auto r = Evaluate(req, quick);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kTimeout) << r->message;
  EXPECT_EQ(r->message.rfind("test shape", 0), 0u) << r->message;
  EXPECT_NE(r->message.find("did not finish within its 2 s allowance"), std::string::npos)
      << r->message;
  const size_t hang = spec_->test_shapes.size() - 1;
  ASSERT_EQ(r->cases.size(), hang + 1) << "the cases after the hang never ran";
  for (size_t i = 0; i < hang; ++i) EXPECT_EQ(r->cases[i].verdict, Verdict::kOk) << i;
  EXPECT_EQ(r->cases[hang].verdict, Verdict::kTimeout);
  // Without the watchdog the runner ran to its whole limit: 15 s + 4 s per test shape + 12 s per
  // bench shape, 95 s here.
  const double bound = quick.startup_timeout_s + 3 * quick.case_timeout_s + 10;
  EXPECT_LT(r->phase_seconds["candidate_run"], bound);
  std::printf("hang: candidate runner %.1f s (bound %.0f s), evaluation %.1f s\n",
              r->phase_seconds["candidate_run"], bound, r->phase_seconds["total"]);

  ExpectTheNextEvaluationWorks();
}

// Deep mode (compute-sanitizer memcheck, racecheck, initcheck over the test shapes): the
// hand-tuned kernel is clean under all three tools, so the trusted runner's own kernels and
// copies are too (initcheck checks them alongside the candidate's).
// Runners queue for their GPU (evaluator/gpu_lock.h). Held elsewhere past the runner's wait, the
// evaluation fails as the judge's trouble, never as a verdict on the candidate; released, the next
// evaluation runs.
TEST_F(EvalGpuTest, ABusyGpuFailsTheEvaluationNotTheCandidate) {
  opts_.gpu_lock_dir = testing::TempDir() + "/ws_gpu_locks_" + std::to_string(::getpid());
  opts_.gpu_lock_wait_s = 2;
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  {
    auto held = AcquireGpuLock(opts_.gpu_lock_dir, GpuLockName(visible ? visible : ""));
    ASSERT_TRUE(held.ok()) << held.status().message();
    EvalRequest req = Request(Baseline());
    req.time_bench = false;
    auto r = Evaluate(req, opts_);
    ASSERT_FALSE(r.ok()) << "it ran while its GPU was held: " << VerdictName(r->verdict);
    EXPECT_NE(r.status().message().find("the GPU stayed busy"), std::string::npos)
        << r.status().message();
  }
  ExpectTheNextEvaluationWorks();
  fs::remove_all(opts_.gpu_lock_dir);
}

TEST_F(EvalGpuTest, HandTunedKernelPassesDeepMode) {
  auto cs = FindComputeSanitizer();
  if (!cs.ok()) GTEST_SKIP() << "deep mode needs compute-sanitizer: " << cs.status().message();
  EvalRequest req =
      Request(ReadText(std::string(WS_SOURCE_DIR) + "/kernels/mxfp8_quantize_rowwise/kernel.cu"));
  req.time_bench = false;
  req.include_bench = false;  // deep mode runs the test shapes; the bench shapes add nothing
  req.deep = true;
  auto r = Evaluate(req, opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kOk) << r->message;
  EXPECT_EQ(DeepModeFailure(*r), "") << r->message;
  for (const auto& c : r->cases) EXPECT_NE(c.kind, "bench") << "bench shapes were asked to be left out";
  ASSERT_EQ(r->deep.size(), 3u);
  for (const auto& [tool, state] : r->deep) EXPECT_EQ(state, "clean") << tool;
}

// The scale gathers (ws::mx::ScaleGather, the second launch of the transposing quantizers) read
// a workspace the first launch wrote: initcheck, not only memcheck and racecheck, stays clean, and
// a finding inside the device library counts against the kernel (a dual-tile gather and the
// SwiGLU backward's row-part gather, the two forms; the SwiGLU forward too, whose ragged tiles
// fill their pad scale bytes by a call since session 56, as the backward's do).
TEST_F(EvalGpuTest, HandTunedScaleGathersPassDeepMode) {
  auto cs = FindComputeSanitizer();
  if (!cs.ok()) GTEST_SKIP() << "deep mode needs compute-sanitizer: " << cs.status().message();
  const std::pair<const char*, std::map<std::string, std::string>> cases[] = {
      {"mxfp8_quantize_dual", {{"rounding", "rceil"}}},
      {"swiglu_quantize_bwd", {{"rounding", "rceil"}, {"variant", "standard"}}},
      {"swiglu_quantize_fwd", {{"rounding", "floor"}, {"variant", "clamped"}}}};
  for (const auto& [problem, params] : cases) {
    SCOPED_TRACE(problem);
    const std::string dir = std::string(WS_SOURCE_DIR);
    auto spec = LoadProblem(dir + "/problems/" + problem + "/spec.json");
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    EvalRequest req = Request(ReadText(dir + "/kernels/" + problem + "/kernel.cu"));
    req.spec = &*spec;
    req.params = params;
    req.time_bench = false;
    req.include_bench = false;
    req.deep = true;
    auto r = Evaluate(req, opts_);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->verdict, Verdict::kOk) << r->message;
    EXPECT_EQ(DeepModeFailure(*r), "") << r->message;
    ASSERT_EQ(r->deep.size(), 3u);
    for (const auto& [tool, state] : r->deep) EXPECT_EQ(state, "clean") << tool;
  }
}

// A GEMM at a bench shape whose output (128 MiB) comes back whole from the check run and as a
// keyed sample of its rows from the audited and last runs: the honest kernel passes and the
// sampled dumps are a fraction of the whole; a kernel honest in its first run at that shape, that
// then leaves 256 rows zero, is caught in the audited run, the message naming the sample.
class SampledAuditGpuTest : public EvalGpuTest {
 protected:
  EvalRequest GemmRequest(const std::string& source) {
    auto spec = LoadProblem(std::string(WS_SOURCE_DIR) + "/problems/bf16_gemm/spec.json");
    EXPECT_TRUE(spec.ok()) << spec.status().message();
    gemm_ = std::make_unique<ProblemSpec>(std::move(*spec));
    EvalRequest req = Request(source);
    req.spec = gemm_.get();
    req.params = {};
    req.include_hidden = false;
    req.bench_where = "M == 8192 && N == 8192";
    return req;
  }
  std::string HandTuned() {
    return ReadText(std::string(WS_SOURCE_DIR) + "/kernels/bf16_gemm/kernel.cu");
  }
  std::unique_ptr<ProblemSpec> gemm_;
};

TEST_F(SampledAuditGpuTest, HonestGemmPassesOnSampledRows) {
  EvaluatorOptions keep = opts_;
  keep.keep_scratch = true;
  auto r = Evaluate(GemmRequest(HandTuned()), keep);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kOk) << r->message;
  ASSERT_NE(r->kept_scratch, "");
  const int64_t whole = int64_t{8192} * 8192 * 2;
  int seen = 0;
  for (const auto& e : fs::directory_iterator(r->kept_scratch)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("cand-bench-", 0) != 0 || name.find(".d.bin") == std::string::npos) continue;
    const auto size = static_cast<int64_t>(fs::file_size(e.path()));
    if (name.find(".check.") != std::string::npos) {
      EXPECT_EQ(size, whole) << name;
    } else {
      EXPECT_GT(size, whole / 32) << name;  // about 1/16 of the rows
      EXPECT_LT(size, whole / 8) << name;
      EXPECT_EQ(size % (8192 * 2), 0) << name;
    }
    ++seen;
  }
  EXPECT_EQ(seen, 3) << "the check, audit and last dumps of the one bench shape";
  std::error_code ec;
  fs::remove_all(r->kept_scratch, ec);
}

TEST_F(SampledAuditGpuTest, RowsLeftUnwrittenAfterTheCheckRunAreCaught) {
  std::string src = HandTuned();
  src = WithExtraLaunch(
      src, R"({ "kernel": "ws_test_count_big", "grid": [1], "block": [1], "args": ["M", "N"] })",
      "__device__ int ws_test_big_runs;\n"
      "extern \"C\" __global__ void ws_test_count_big(int M, int N) {\n"
      "  if (static_cast<long long>(M) * N >= (1 << 24)) ++ws_test_big_runs;\n"
      "}\n");
  src = WithExtraLaunch(
      src,
      R"({ "kernel": "ws_test_zero_rows", "grid": [256], "block": [256],
           "args": ["d", "M", "N"] })",
      "extern \"C\" __global__ void ws_test_zero_rows(unsigned short* d, int M, int N) {\n"
      "  if (ws_test_big_runs < 2) return;  // honest in the check run\n"
      "  const long long first = static_cast<long long>(M / 2) * N, n = 256LL * N;\n"
      "  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 65536)\n"
      "    d[first + i] = 0;\n"
      "}\n");
  auto r = Evaluate(GemmRequest(src), opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kWrongAnswer) << r->message;
  EXPECT_NE(r->message.find("in the audited timed run"), std::string::npos) << r->message;
  EXPECT_NE(r->message.find("of its 8192 rows, drawn at random after the run"),
            std::string::npos)
      << r->message;
}

// A kernel correct by luck: two threads of different warps write one shared scale byte with
// different values and no barrier between them; the later write (delayed by a spin) is the right
// one, so every normal run passes. racecheck sees the write-after-write hazard.
TEST_F(EvalGpuTest, DeepModeFlagsARaceThatIsCorrectByLuck) {
  auto cs = FindComputeSanitizer();
  if (!cs.ok()) GTEST_SKIP() << "deep mode needs compute-sanitizer: " << cs.status().message();
  std::string src = WithExtraLaunch(
      Baseline(), R"({ "kernel": "ws_test_racy_scale", "grid": [1], "block": [64], "args": ["scales"] })",
      "extern \"C\" __global__ void ws_test_racy_scale(unsigned char* s) {\n"
      "  __shared__ unsigned char slot;\n"
      "  const unsigned char right = s[0];\n"
      "  if (threadIdx.x == 0) slot = right ^ 0x5A;\n"
      "  if (threadIdx.x == 32) {\n"
      "    const long long t0 = clock64();\n"
      "    while (clock64() - t0 < 200000) { }\n"
      "    slot = right;\n"
      "  }\n"
      "  __syncthreads();\n"
      "  if (threadIdx.x == 0) s[0] = slot;\n"
      "}\n");
  EvalRequest req = Request(src);
  req.time_bench = false;
  auto normal = Evaluate(req, opts_);
  ASSERT_TRUE(normal.ok()) << normal.status().message();
  ASSERT_EQ(normal->verdict, Verdict::kOk) << "the race must be lucky in a normal run: "
                                           << normal->message;
  req.deep = true;
  auto r = Evaluate(req, opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kWrongAnswer) << r->message;
  EXPECT_NE(r->message.find("racecheck"), std::string::npos) << r->message;
  EXPECT_NE(r->message.find("ws_test_racy_scale"), std::string::npos) << r->message;
  EXPECT_EQ(r->deep["memcheck"], "clean");
  EXPECT_NE(r->deep["racecheck"].find("hazard"), std::string::npos) << r->deep["racecheck"];
  EXPECT_EQ(r->deep["initcheck"].rfind("not run", 0), 0u) << r->deep["initcheck"];
}

}  // namespace
}  // namespace ws
