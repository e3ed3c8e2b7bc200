// TMA tensor maps end to end: a made-up copy problem (bf16 x [M, K] -> y, exact) whose candidate
// loads boxes of x into shared memory with cp.async.bulk.tensor through a plan-declared tensor map
// and an mbarrier, then writes them to y. Evaluated through the real evaluator and runner, the
// output must equal the input on every shape, ragged ones included (the map's zero fill past M is
// never written out). The kernel's NVRTC compile for sm_90a runs everywhere; the evaluation skips
// where there is no GPU.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "evaluator/evaluator.h"
#include "problems/problems.h"

namespace ws {
namespace {

namespace fs = std::filesystem;

// The candidate. Box: 64 elements of K (128 bytes, one 128-byte swizzle span) by 32 rows.
constexpr char kTmaCopy[] = R"CU(/* warpsmith:plan
{ "knobs": { "BK": [64], "BM": [32] },
  "tensor_maps": { "tma_x": { "tensor": "x", "dims": ["K", "M"], "box": ["BK", "BM"],
                              "swizzle": 0, "oob_fill": "zero", "l2_promotion": 128 } },
  "launch": [ { "kernel": "tma_copy", "grid": ["K / BK", "ceil_div(M, BM)"], "block": [128],
                "smem": "BK * BM * 2",
                "args": ["tma_x", "y", "M", "K"], "pdl": true } ] }
*/
#include <cuda_bf16.h>

// CUtensorMap's layout: <cuda.h> does not compile under NVRTC (it includes <stdlib.h>).
struct alignas(64) TmaDesc {
  unsigned long long v[16];
};

extern "C" __global__ void tma_copy(const __grid_constant__ TmaDesc tma_x,
                                    __nv_bfloat16* y, int M, int K) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) __nv_bfloat16 tile[];  // (BM, BK)
  __shared__ __align__(8) unsigned long long bar;
  const int k0 = blockIdx.x * BK, m0 = blockIdx.y * BM;
  const unsigned smem_bar = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
  const unsigned smem_tile = static_cast<unsigned>(__cvta_generic_to_shared(tile));
  // Launched with "pdl": wait for the previous work on the stream before touching memory.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_bar));
    asm volatile("fence.proxy.async.shared::cta;");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    // The whole box arrives, zero-filled past M: BK * BM * 2 bytes.
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_bar),
                 "r"(BK * BM * 2));
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_tile),
        "l"(&tma_x), "r"(k0), "r"(m0), "r"(smem_bar)
        : "memory");
  }
  unsigned done = 0;
  while (!done) {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(smem_bar)
        : "memory");
  }
  for (int i = threadIdx.x; i < BK * BM; i += blockDim.x) {
    const int m = m0 + i / BK, k = k0 + i % BK;
    if (m < M) y[static_cast<long long>(m) * K + k] = tile[i];
  }
#endif
}
)CU";

// The trusted reference of the made-up problem: a plain copy.
constexpr char kReference[] = R"CU(/* warpsmith:plan
{ "launch": [ { "kernel": "copy", "grid": ["ceil_div(M * K, 256)"], "block": [256],
                "args": ["x", "y", {"i64": "M * K"}] } ] }
*/
#include <cuda_bf16.h>
extern "C" __global__ void copy(const __nv_bfloat16* x, __nv_bfloat16* y, long long n) {
  long long i = blockIdx.x * 256ll + threadIdx.x;
  if (i < n) y[i] = x[i];
}
)CU";

constexpr char kSpec[] = R"J({
  "name": "tma_copy",
  "description": "Copy x [M, K] bf16 to y, exactly (a test problem for TMA tensor maps).",
  "symbols": ["M", "K"],
  "constraints": ["M >= 1", "K % 64 == 0"],
  "tensors": [
    { "name": "x", "dtype": "bf16", "shape": ["M", "K"], "role": "input" },
    { "name": "y", "dtype": "bf16", "shape": ["M", "K"], "role": "output" }
  ],
  "shapes": {
    "test": [ { "M": 1, "K": 64 }, { "M": 37, "K": 128 }, { "M": 130, "K": 512 } ],
    "bench": [ { "M": 4096, "K": 4096, "source": "a 32 MiB copy" } ],
    "hidden": [ { "M": 33, "K": 192 } ]
  },
  "cost": { "bytes": "4 * M * K" },
  "tolerance": { "y": "exact" },
  "cpu_reference": "mxfp8_dequantize",
  "gpu_reference": "reference.cu",
  "baseline": "reference.cu"
})J";

class TmaTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) / ("ws_tma_" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "problems/tma_copy");
    std::ofstream(dir_ / "problems/tma_copy/spec.json") << kSpec;
    std::ofstream(dir_ / "problems/tma_copy/reference.cu") << kReference;
    auto s = LoadProblem((dir_ / "problems/tma_copy/spec.json").string());
    ASSERT_TRUE(s.ok()) << s.status().message();
    spec_ = std::move(*s);
    opts_.workspace = (dir_ / "ws").string();
    opts_.runner = std::string(WS_BINARY_DIR) + "/ws_runner";
    opts_.compile_worker = std::string(WS_BINARY_DIR) + "/ws_compile";
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  ProblemSpec spec_;
  EvaluatorOptions opts_;
};

#ifndef WS_TMA_GPU_ONLY
// No GPU needed: the plan is valid for the problem and the kernel compiles for sm_90a.
TEST_F(TmaTest, CandidateCompilesForSm90a) {
  auto plan = ParsePlan(kTmaCopy);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_TRUE(ValidatePlan(*plan, spec_).ok());
  CompileRequest req;
  req.source = kTmaCopy;
  req.arch = Arch::kSm90a;
  req.defines = {{"BK", "64"}, {"BM", "32"}};
  CompileOptions copts;
  copts.cache_dir = (dir_ / "cache").string();
  copts.compile_worker = opts_.compile_worker;
  auto r = Compile(req, copts);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->ok) << r->log;
}

#endif

#ifndef WS_TMA_CPU_ONLY
TEST_F(TmaTest, TmaLoadedCopyEqualsTheInput) {
  std::string why;
  auto device = ProbeDevice(opts_, &why);
  ASSERT_TRUE(device.ok()) << device.status().message();
  if (!*device) GTEST_SKIP() << "no GPU here (" << why << "); GPU tests skipped";
  if ((*device)->arch != "sm_90a" && (*device)->arch != "sm_100a") {
    GTEST_SKIP() << "TMA needs sm_90 or later, not " << (*device)->arch;
  }
  EvalRequest req;
  req.spec = &spec_;
  req.source = kTmaCopy;
  req.arch = (*device)->arch == "sm_100a" ? Arch::kSm100a : Arch::kSm90a;
  req.device = **device;
  auto r = Evaluate(req, opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kOk) << r->message;
  for (const auto& c : r->cases) EXPECT_EQ(c.verdict, Verdict::kOk) << c.kind << ": " << c.message;
}
#endif

}  // namespace
}  // namespace ws
