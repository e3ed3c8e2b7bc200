// CubinKernelParams / PlanCubinMismatch (cubin.cc): a plan whose argument lists disagree with its
// kernels is rejected at compile time, before any GPU, as the runner would reject it there.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "base/files.h"
#include "evaluator/evaluator.h"
#include "evaluator/internal.h"
#include "problems/problems.h"

namespace ws {
namespace {

namespace fs = std::filesystem;

constexpr char kKernels[] = R"(
struct alignas(64) Map { char bytes[128]; };
extern "C" __global__ void mixed(const __grid_constant__ Map m, const float* x, int n,
                                 long long z, float* y) {
  if (threadIdx.x == 0) y[0] = x[n] + m.bytes[1] + static_cast<float>(z);
}
extern "C" __global__ void none() {}
)";

std::string CompiledCubin(Arch arch) {
  CompileOptions o;
  o.cache_dir = testing::TempDir() + "/ws_cubin_cache_" + std::to_string(::getpid());
  o.compile_worker = std::string(WS_BINARY_DIR) + "/ws_compile";
  o.timeout_s = 60;
  auto r = Compile({kKernels, arch, {}, {}}, o);
  EXPECT_TRUE(r.ok() && r->ok) << (r.ok() ? r->log : r.status().message());
  if (!r.ok() || !r->ok) return "";
  auto bytes = ReadFile(r->cubin_path);
  return bytes.ok() ? *bytes : "";
}

TEST(CubinTest, ReadsEachKernelsParameterSizesOnBothArchitectures) {
  for (Arch arch : {Arch::kSm90a, Arch::kSm100a}) {
    const std::string cubin = CompiledCubin(arch);
    ASSERT_FALSE(cubin.empty());
    auto params = CubinKernelParams(cubin);
    ASSERT_TRUE(params.ok()) << params.status().message();
    ASSERT_TRUE(params->count("mixed")) << ArchName(arch);
    EXPECT_EQ(params->at("mixed"), (std::vector<int>{128, 8, 4, 8, 8})) << ArchName(arch);
    if (params->count("none")) {
      EXPECT_TRUE(params->at("none").empty());
    }
  }
}

TEST(CubinTest, MalformedBytesAreAnErrorNotACrash) {
  EXPECT_FALSE(CubinKernelParams("").ok());
  EXPECT_FALSE(CubinKernelParams("not an elf at all, but long enough to have a header maybe...."
                                 "................................")
                   .ok());
  const std::string cubin = CompiledCubin(Arch::kSm90a);
  ASSERT_FALSE(cubin.empty());
  // A truncation that cuts the section header table (e_shoff at 0x28, e_shnum at 0x3c, 64-byte
  // entries) is an error with a message; any other truncation, and bytes flipped across the
  // headers and the first sections, parse or fail, but never read out of bounds.
  uint64_t shoff = 0;
  uint16_t shnum = 0;
  std::memcpy(&shoff, cubin.data() + 0x28, sizeof(shoff));
  std::memcpy(&shnum, cubin.data() + 0x3c, sizeof(shnum));
  const uint64_t headers_end = shoff + uint64_t{shnum} * 64;
  ASSERT_LE(headers_end, cubin.size());
  int cut_headers = 0;
  for (size_t n = 0; n < cubin.size(); n += 1 + n / 8) {
    auto r = CubinKernelParams(cubin.substr(0, n));
    if (n < headers_end) {
      ++cut_headers;
      ASSERT_FALSE(r.ok()) << "truncated to " << n << " bytes of " << cubin.size();
      EXPECT_NE(r.status().message(), "");
    }
  }
  EXPECT_GT(cut_headers, 10);
  for (size_t at = 0; at < std::min<size_t>(cubin.size(), 4096); at += 7) {
    std::string bad = cubin;
    bad[at] = static_cast<char>(~bad[at]);
    (void)CubinKernelParams(bad);
  }
}

// A launch of "mixed" whose arguments are these kinds: a tensor is named "x" (a tensor of the
// quantizer's spec, which parses as an i32 expression until resolved), the rest "a".
Plan PlanOf(std::vector<PlanArg::Kind> kinds) {
  Plan p;
  PlanLaunch l;
  l.kernel = "mixed";
  for (PlanArg::Kind k : kinds) {
    if (k == PlanArg::Kind::kTensor) {
      l.args.push_back({PlanArg::Kind::kI32, "x"});
    } else {
      l.args.push_back({k, "a"});
    }
  }
  p.launches.push_back(l);
  return p;
}

ProblemSpec Quantizer() {
  auto s = LoadProblem(std::string(WS_SOURCE_DIR) + "/problems/mxfp8_quantize_rowwise/spec.json");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(*s) : ProblemSpec{};
}

TEST(CubinTest, PlanMismatchNamesTheLaunchAndWhatDiffers) {
  using K = PlanArg::Kind;
  const std::map<std::string, std::vector<int>> params = {{"mixed", {128, 8, 4, 8, 8}}};
  const ProblemSpec spec = Quantizer();
  auto mismatch = [&](std::vector<PlanArg::Kind> kinds) {
    return PlanCubinMismatch(PlanOf(kinds), spec, params);
  };
  EXPECT_EQ(mismatch({K::kTensorMap, K::kTensor, K::kI32, K::kI64, K::kWorkspace}), "");
  EXPECT_EQ(mismatch({K::kTensorMap, K::kTensor, K::kI32, K::kI64}),
            "launch 0 (mixed): the kernel takes 5 parameters, the plan passes 4");
  std::string m = mismatch({K::kTensor, K::kTensor, K::kI32, K::kI64, K::kTensor});
  EXPECT_NE(m.find("parameter 0 is 128 bytes, the plan passes 8 bytes"), std::string::npos) << m;
  m = mismatch({K::kTensorMap, K::kTensor, K::kTensor, K::kI64, K::kTensor});
  EXPECT_NE(m.find("parameter 2 is 4 bytes"), std::string::npos) << m;
  // A kernel the cubin does not describe is the runner's to judge.
  Plan other = PlanOf({K::kI32});
  other.launches[0].kernel = "elsewhere";
  EXPECT_EQ(PlanCubinMismatch(other, spec, params), "");
}

// Through Evaluate: the hand-tuned quantizer with one argument dropped from its plan is a plan
// error in a compile-only run, on a machine without a GPU.
TEST(CubinTest, CompileOnlyEvaluationRejectsAMiscountedPlan) {
  const ProblemSpec spec = Quantizer();
  ASSERT_FALSE(spec.name.empty());
  EvaluatorOptions opts;
  opts.workspace = testing::TempDir() + "/ws_cubin_eval_" + std::to_string(::getpid());
  opts.runner = std::string(WS_BINARY_DIR) + "/ws_runner";
  opts.compile_worker = std::string(WS_BINARY_DIR) + "/ws_compile";
  std::string source =
      ReadFile(std::string(WS_SOURCE_DIR) + "/kernels/mxfp8_quantize_rowwise/kernel.cu").value();
  EvalRequest req;
  req.spec = &spec;
  req.params = {{"rounding", "rceil"}};
  req.compile_only = true;
  req.source = source;
  auto good = Evaluate(req, opts);
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ(good->verdict, Verdict::kNotRun) << good->message;

  const std::string args = R"("args":  ["x", "q", "scales", "M", "K"])";
  const size_t at = source.find(args);
  ASSERT_NE(at, std::string::npos) << "the quantizer's plan changed: update this test";
  req.source = source.replace(at, args.size(), R"("args":  ["x", "q", "scales", "M"])");
  auto bad = Evaluate(req, opts);
  ASSERT_TRUE(bad.ok()) << bad.status().message();
  EXPECT_EQ(bad->verdict, Verdict::kPlanError);
  EXPECT_NE(bad->message.find("the kernel takes 5 parameters, the plan passes 4"),
            std::string::npos)
      << bad->message;
  fs::remove_all(opts.workspace);
}

}  // namespace
}  // namespace ws
