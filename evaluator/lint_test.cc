#include "evaluator/lint.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ws {
namespace {

const std::string kProblems = std::string(WS_SOURCE_DIR) + "/problems";

ProblemSpec Load(const std::string& name) {
  auto spec = LoadProblem(kProblems + "/" + name + "/spec.json");
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return *spec;
}

// True if some finding contains `part`.
::testing::AssertionResult HasFinding(const std::vector<std::string>& f, const std::string& part) {
  std::string all;
  for (const auto& s : f) {
    if (s.find(part) != std::string::npos)
      return ::testing::AssertionSuccess();
    all += "\n  " + s;
  }
  return ::testing::AssertionFailure() << "no finding with '" << part << "' among:" << all;
}

TEST(LintTest, ModelProblemsAreClean) {
  for (const char* name : {"mxfp8_quantize_rowwise", "mxfp8_dequantize"}) {
    const std::vector<std::string> f = LintProblem(Load(name));
    EXPECT_TRUE(f.empty()) << name << ": " << (f.empty() ? "" : f[0]);
  }
}

TEST(LintTest, MissingShapesSourcesAndTolerances) {
  ProblemSpec p = Load("mxfp8_quantize_rowwise");
  p.hidden_shapes.clear();
  p.bench_shapes[1].source.clear();
  p.tolerance.erase("scales");
  p.cost_bytes = "M - M";
  const std::vector<std::string> f = LintProblem(p);
  EXPECT_TRUE(HasFinding(f, "no hidden shapes"));
  EXPECT_TRUE(HasFinding(f, "bench shape M=131072 K=2048 has no source"));
  EXPECT_TRUE(HasFinding(f, "output 'scales' has no tolerance entry"));
  EXPECT_TRUE(HasFinding(f, "cost.bytes is 0 at bench shape M=131072 K=7168"));
}

TEST(LintTest, LooseTolerances) {
  ProblemSpec p = Load("mxfp8_dequantize");
  p.description += " The tolerance is loose on purpose.";
  Tolerance t;
  t.kind = ToleranceKind::kUlp;
  t.max_ulp = 5;
  p.tolerance["y"] = t;
  EXPECT_TRUE(HasFinding(LintProblem(p), "tolerance.y: max 5 ulps is looser than 4"));
  t.max_ulp = 4;
  p.tolerance["y"] = t;
  EXPECT_TRUE(LintProblem(p).empty());

  t = Tolerance{};
  t.kind = ToleranceKind::kClose;
  t.rtol = 1.0 / 32;
  p.tolerance["y"] = t;
  EXPECT_TRUE(
      HasFinding(LintProblem(p), "tolerance.y: rtol 0.03125 is looser than 0.015625 for bf16"));
  t.rtol = 1.0 / 64;
  t.atol = 1e30;  // swamps every value
  p.tolerance["y"] = t;
  EXPECT_TRUE(HasFinding(LintProblem(p),
                         "tolerance.y: atol 1e+30 is over 0.01 of the output's median |value|"));

  t = Tolerance{};
  t.kind = ToleranceKind::kGemm;
  t.rel_frobenius = 0.02;
  t.elem_fraction = 0.9;
  p.tolerance["y"] = t;
  std::vector<std::string> f = LintProblem(p);
  EXPECT_TRUE(HasFinding(f, "tolerance.y: rel_frobenius 0.02 is looser than 0.01"));
  EXPECT_TRUE(HasFinding(f, "tolerance.y: elem_fraction 0.9 is looser than 0.99"));
  EXPECT_TRUE(HasFinding(f, "a gemm tolerance but no cost.flops"));

  t = Tolerance{};
  t.kind = ToleranceKind::kCustom;
  t.checker = "not_registered";
  p.tolerance["y"] = t;
  EXPECT_TRUE(HasFinding(LintProblem(p), "no custom checker registered as 'not_registered'"));
}

TEST(LintTest, LooseMxAndUnexplainedTolerance) {
  ProblemSpec p = Load("mxfp8_quantize_rowwise");
  Tolerance data;
  data.kind = ToleranceKind::kMxData;
  data.partner = "scales";
  data.max_ulp = 3;
  data.scale_mismatch_fraction = 0.05;
  Tolerance scales;
  scales.kind = ToleranceKind::kMxScales;
  scales.partner = "q";
  p.tolerance = {{"q", data}, {"scales", scales}};
  const std::vector<std::string> f = LintProblem(p);
  EXPECT_TRUE(HasFinding(f, "tolerance.q: max_ulp 3 is looser than 2"));
  EXPECT_TRUE(HasFinding(f, "tolerance.q: scale_mismatch_fraction 0.05 is looser than 0.01"));
  EXPECT_TRUE(HasFinding(f, "the description does not explain its (non-exact) tolerance"));
}

TEST(LintTest, InputBlindAndNearConstantOutputs) {
  ProblemSpec p = Load("mxfp8_quantize_rowwise");
  // Every input element 1.0 whatever the seed: the outputs cannot change.
  p.tensors[0].init = InitSpec{};
  p.tensors[0].init.dist = "uniform";
  p.tensors[0].init.lo = p.tensors[0].init.hi = 1;
  std::vector<std::string> f = LintProblem(p);
  EXPECT_TRUE(HasFinding(f,
                         "output 'q' does not change when the inputs change at every test "
                         "shape (CPU reference, two seeds; largest M=23302 K=2880)"));
  EXPECT_TRUE(HasFinding(f, "output 'scales' does not change"));

  // 1.0 with rare outliers: the outputs change with the seed but stay > 99% one value.
  p.tensors[0].init.dist = "normal_outliers";
  p.tensors[0].init.mean = 1;
  p.tensors[0].init.stddev = 1e-30;
  p.tensors[0].init.outlier_fraction = 0.0002;
  p.tensors[0].init.outlier_scale = 3;
  f = LintProblem(p);
  EXPECT_TRUE(HasFinding(f, "output 'q' is near-constant (99."));
  EXPECT_TRUE(HasFinding(f, "output 'scales' is near-constant"));

  // Ordinary normal inputs: clean.
  p.tensors[0].init = InitSpec{};
  EXPECT_TRUE(LintProblem(p).empty());
}

}  // namespace
}  // namespace ws
