#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "problems/init.h"
#include "problems/problems.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const std::string kProblems = std::string(WS_SOURCE_DIR) + "/problems";
const std::string kSpec = kProblems + "/mxfp8_quantize_rowwise/spec.json";

Json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return Json::parse(s.str());
}

// A scratch problems root: copies of the real spec with dummy kernels, free to break.
class SpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            fmt::format("ws_spec_test_{}_{}", getpid(),
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Writes root/<folder>/spec.json (text as given) plus dummy reference.cu, baseline.cu and
  // starting.cu.
  std::string WriteProblem(const std::string& folder, const std::string& text) {
    const fs::path dir = root_ / folder;
    fs::create_directories(dir);
    std::ofstream(dir / "reference.cu") << "// dummy\n";
    std::ofstream(dir / "baseline.cu") << "// dummy\n";
    std::ofstream(dir / "starting.cu") << "// dummy\n";
    std::ofstream(dir / "spec.json") << text;
    return (dir / "spec.json").string();
  }

  fs::path root_;
};

TEST(ProblemSetTest, RealProblemsFolderValidates) {
  const auto set = LoadProblemSet(kProblems);
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_FALSE(set->empty());
  for (const ProblemSpec& p : *set) {
    for (const auto* shapes : {&p.test_shapes, &p.bench_shapes, &p.hidden_shapes}) {
      for (const Shape& s : *shapes) EXPECT_TRUE(ValidateShape(p, s).ok()) << p.name;
    }
    EXPECT_NE(FindCpuReference(p.cpu_reference), nullptr) << p.name;
  }
}

TEST(ProblemSetTest, Mxfp8QuantizeRowwiseSpec) {
  const auto spec = LoadProblem(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->name, "mxfp8_quantize_rowwise");
  EXPECT_EQ(spec->symbols, (std::vector<std::string>{"M", "K"}));
  EXPECT_EQ(spec->test_shapes.size(), 9u);
  EXPECT_EQ(spec->bench_shapes.size(), 4u);
  EXPECT_EQ(spec->hidden_shapes.size(), 5u);
  EXPECT_EQ(spec->bench_shapes[0].symbols.at("M"), 131072);
  EXPECT_EQ(spec->bench_shapes[0].symbols.at("K"), 7168);
  EXPECT_FALSE(spec->bench_shapes[0].source.empty());
  ASSERT_EQ(spec->params.size(), 1u);
  EXPECT_EQ(spec->params[0].values, (std::vector<std::string>{"rceil", "floor"}));
  EXPECT_EQ(spec->params[0].default_value, "rceil");
  ASSERT_EQ(spec->tensors.size(), 3u);
  EXPECT_EQ(spec->tensors[0].init.dist, "mx_blocks");
  EXPECT_EQ(spec->tensors[2].dtype, DType::kE8M0);
  EXPECT_EQ(spec->tolerance.size(), 2u);
  EXPECT_EQ(spec->starting_kernel, "starting.cu");
  EXPECT_EQ(fs::path(spec->dir).filename(), "mxfp8_quantize_rowwise");

  const Shape& s = spec->test_shapes[3];  // M=37, K=256
  const auto params = ResolveParams(*spec, {});
  ASSERT_TRUE(params.ok());
  const SymbolTable symbols = BindSymbols(*spec, s, *params);
  EXPECT_EQ(symbols.at("rounding"), 0);
  const auto dims = TensorDims(*spec->FindTensor("scales"), symbols);
  ASSERT_TRUE(dims.ok());
  EXPECT_EQ(*dims, (std::vector<int64_t>{37, 8}));
  EXPECT_EQ(*TensorNumel(*spec->FindTensor("q"), symbols), 37 * 256);
  EXPECT_EQ(*EvalExpr(spec->cost_bytes, symbols), 37 * 256 * 3 + 37 * 8);
}

TEST(ProblemSetTest, ResolveParamsAndBindSymbols) {
  const auto spec = LoadProblem(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const auto floor = ResolveParams(*spec, {{"rounding", "floor"}});
  ASSERT_TRUE(floor.ok());
  EXPECT_EQ(floor->at("rounding"), "floor");
  const Shape shape{{{"M", 2}, {"K", 64}}, ""};
  EXPECT_EQ(BindSymbols(*spec, shape, *floor).at("rounding"), 1);
  EXPECT_EQ(BindSymbols(*spec, shape, {}).at("rounding"), 0);  // default

  const auto bad_name = ResolveParams(*spec, {{"roundin", "floor"}});
  ASSERT_FALSE(bad_name.ok());
  EXPECT_NE(bad_name.status().message().find("unknown parameter 'roundin' (parameters: rounding)"),
            std::string::npos)
      << bad_name.status().message();
  const auto bad_value = ResolveParams(*spec, {{"rounding", "nearest"}});
  ASSERT_FALSE(bad_value.ok());
  EXPECT_NE(bad_value.status().message().find("'nearest' (values: rceil, floor)"),
            std::string::npos)
      << bad_value.status().message();
}

TEST(ProblemSetTest, ValidateShapeAndTensorSizes) {
  const auto spec = LoadProblem(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  struct Case {
    SymbolTable symbols;
    const char* want;  // empty: valid
  };
  const Case cases[] = {
      {{{"M", 1}, {"K", 32}}, ""},
      {{{"M", 0}, {"K", 32}}, "constraint 'M >= 1' does not hold"},
      {{{"M", 1}, {"K", 48}}, "constraint 'K % 32 == 0' does not hold"},
      {{{"M", 1}}, "missing symbol 'K'"},
      {{{"M", 1}, {"K", 32}, {"N", 3}}, "unknown symbol 'N'"},
  };
  for (const Case& c : cases) {
    const Status s = ValidateShape(*spec, Shape{c.symbols, ""});
    if (std::string(c.want).empty()) {
      EXPECT_TRUE(s.ok()) << s.message();
    } else {
      EXPECT_NE(s.message().find(c.want), std::string::npos) << s.message();
    }
  }
  const SymbolTable huge = {{"M", int64_t{1} << 40}, {"K", int64_t{1} << 40}, {"rounding", 0}};
  EXPECT_FALSE(TensorNumel(*spec->FindTensor("x"), huge).ok());
  const SymbolTable negative = {{"M", -2}, {"K", 32}, {"rounding", 0}};
  const auto dims = TensorDims(*spec->FindTensor("x"), negative);
  ASSERT_FALSE(dims.ok());
  EXPECT_NE(dims.status().message().find("negative"), std::string::npos);
}

TEST_F(SpecTest, MalformedSpecsNameTheField) {
  const Json base = ReadJson(kSpec);
  struct Case {
    std::function<void(Json&)> mutate;
    const char* want;  // after "<path>: "
  };
  const std::vector<Case> cases = {
      {[](Json& j) { j.erase("name"); }, "name: missing required field"},
      {[](Json& j) { j["foo"] = 1; }, "foo: unknown key"},
      {[](Json& j) { j["name"] = 5; }, "name: must be a string, not number"},
      {[](Json& j) { j["name"] = "other"; }, "name: 'other' differs from its folder"},
      {[](Json& j) { j["description"] = Json::array(); }, "description: must be a string"},
      {[](Json& j) { j["symbols"] = "M"; }, "symbols: must be an array"},
      {[](Json& j) {
         j["symbols"] = {"M", "K", "M"};
       },
       "symbols[2]: duplicate symbol 'M'"},
      {[](Json& j) { j["symbols"][1] = "2K"; }, "symbols[1]: '2K' is not an identifier"},
      {[](Json& j) { j["constraints"][0] = "M >="; },
       "constraints[0]: expression 'M >=' at column 5: unexpected end"},
      {[](Json& j) { j["constraints"][2] = "N >= 1"; }, "constraints[2]: unknown symbol 'N'"},
      {[](Json& j) { j["params"]["rounding"]["default"] = "nearest"; },
       "params.rounding.default: 'nearest' is not one of the values"},
      {[](Json& j) { j["params"]["rounding"]["extra"] = 1; }, "params.rounding.extra: unknown key"},
      {[](Json& j) { j["params"]["rounding"].erase("values"); },
       "params.rounding.values: missing required field"},
      {[](Json& j) { j["params"]["rounding"]["values"] = Json::array(); },
       "params.rounding.values: must not be empty"},
      {[](Json& j) { j["params"]["M"] = j["params"]["rounding"]; },
       "params.M: 'M' is also a symbol"},
      {[](Json& j) { j["tensors"] = Json::array(); }, "tensors: must be a non-empty array"},
      {[](Json& j) { j["tensors"][1]["shape"][0] = "N"; },
       "tensors[1].shape[0]: unknown symbol 'N'"},
      {[](Json& j) { j["tensors"][2]["shape"][1] = "K /"; },
       "tensors[2].shape[1]: expression 'K /'"},
      {[](Json& j) { j["tensors"][2]["shape"][1] = true; },
       "tensors[2].shape[1]: must be a string, not boolean"},
      {[](Json& j) { j["tensors"][0]["shape"] = "M"; }, "tensors[0].shape: must be an array"},
      {[](Json& j) { j["tensors"][0]["dtype"] = "bfloat16"; },
       "tensors[0].dtype: unknown dtype 'bfloat16'"},
      {[](Json& j) { j["tensors"][0]["role"] = "inout"; }, "tensors[0].role: unknown role 'inout'"},
      {[](Json& j) { j["tensors"][2]["name"] = "q"; },
       "tensors[2].name: duplicate tensor name 'q'"},
      {[](Json& j) { j["tensors"][0]["sahpe"] = 1; }, "tensors[0].sahpe: unknown key"},
      {[](Json& j) { j["tensors"][1].erase("dtype"); }, "tensors[1].dtype: missing required field"},
      {[](Json& j) { j["tensors"][0]["init"]["dist"] = "gamma"; },
       "tensors[0].init.dist: unknown distribution 'gamma'"},
      {[](Json& j) { j["tensors"][0]["init"]["mean"] = 1; }, "tensors[0].init.mean: unknown key"},
      {[](Json& j) {
         j["tensors"][0]["init"] = {{"dist", "uniform"}, {"lo", 1}, {"hi", 0}};
       },
       "tensors[0].init: needs lo < hi"},
      {[](Json& j) {
         j["tensors"][0]["init"] = {{"dist", "normal"}, {"stddev", "big"}};
       },
       "tensors[0].init.stddev: must be a number"},
      {[](Json& j) {
         j["tensors"][1]["init"] = {{"dist", "normal"}};
       },
       "tensors[1].init: outputs take no init"},
      {[](Json& j) {
         j["tensors"][1]["role"] = "input";
         j["tensors"][2]["role"] = "input";
       },
       "tensors: no output tensor"},
      {[](Json& j) { j["shapes"]["test"][0].erase("K"); },
       "shapes.test[0]: shape {M=1}: missing symbol 'K'"},
      {[](Json& j) { j["shapes"]["test"][1]["N"] = 4; }, "shapes.test[1]: unknown symbol 'N'"},
      {[](Json& j) { j["shapes"]["test"][0]["K"] = 33; },
       "shapes.test[0]: shape {K=33, M=1}: constraint 'K % 32 == 0' does not hold"},
      {[](Json& j) { j["shapes"]["test"][0]["K"] = "32"; },
       "shapes.test[0].K: must be an integer, not string"},
      {[](Json& j) { j["shapes"]["test"][0]["K"] = 32.5; }, "shapes.test[0].K: must be an integer"},
      {[](Json& j) { j["shapes"]["test"][0]["K"] = 18446744073709551615ull; },
       "shapes.test[0].K: integer too large"},
      {[](Json& j) { j["shapes"]["bench"][2].erase("source"); },
       "shapes.bench[2].source: bench shapes need a source"},
      {[](Json& j) { j["shapes"]["hidden"][1]["M"] = 0; },
       "shapes.hidden[1]: shape {K=4128, M=0}: constraint 'M >= 1' does not hold"},
      {[](Json& j) { j["shapes"].erase("bench"); }, "shapes.bench: missing required field"},
      {[](Json& j) { j["shapes"]["test"] = Json::array(); }, "shapes.test: must not be empty"},
      {[](Json& j) { j["shapes"]["extra"] = Json::array(); }, "shapes.extra: unknown key"},
      {[](Json& j) {
         j["shapes"]["test"][0] = {{"M", int64_t{1} << 62}, {"K", int64_t{1} << 40}};
       },
       "shapes.test[0]: tensors[0] (x): tensor 'x': element count overflows"},
      {[](Json& j) { j["cost"]["bytes"] = "M * X"; }, "cost.bytes: unknown symbol 'X'"},
      {[](Json& j) { j["cost"]["flops"]["fp8"] = "M +"; }, "cost.flops.fp8: expression 'M +'"},
      {[](Json& j) { j["cost"]["flops"]["fp8"] = "M / (K - K)"; },
       "shapes.test[0]: cost.flops.fp8: expression 'M / (K - K)' at column 3: division by zero"},
      {[](Json& j) { j["cost"].erase("bytes"); }, "cost.bytes: missing required field"},
      {[](Json& j) { j["tolerance"]["x"] = "exact"; }, "tolerance.x: 'x' is not an output tensor"},
      {[](Json& j) { j["tolerance"]["zz"] = "exact"; }, "tolerance.zz: 'zz' is not an output"},
      {[](Json& j) { j["tolerance"]["q"] = "close"; }, "tolerance.q: unknown tolerance 'close'"},
      {[](Json& j) { j["tolerance"]["q"] = {{"kind", "ulp"}, {"max", 1}}; },
       "tolerance.q.kind: 'ulp' needs a bf16, f16 or f32 output, not fp8_e4m3"},
      {[](Json& j) { j["tolerance"].erase("scales"); },
       "tolerance: output 'scales' has no tolerance"},
      {[](Json& j) { j["cpu_reference"] = "nope"; },
       "cpu_reference: no CPU reference registered as 'nope'"},
      {[](Json& j) { j["gpu_reference"] = "missing.cu"; }, "gpu_reference: file '"},
      {[](Json& j) { j["baseline"] = "../x.cu"; },
       "baseline: '../x.cu' must be a path inside the problem folder"},
      {[](Json& j) { j["starting_kernel"] = "/etc/passwd"; },
       "starting_kernel: '/etc/passwd' must be a path inside"},
      {[](Json& j) { j["baseline"] = "cublaslt:nope"; },
       "baseline: unknown library op 'cublaslt:nope'"},
      {[](Json& j) {
         j["baseline"] = "cublaslt:bf16_gemm";
         j.erase("starting_kernel");
       },
       "starting_kernel: required with a library baseline"},
      {[](Json& j) { j = Json::array(); }, "(top level): must be an object, not array"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Json j = base;
    cases[i].mutate(j);
    const std::string path = WriteProblem("mxfp8_quantize_rowwise", j.dump(2));
    const auto r = LoadProblem(path);
    ASSERT_FALSE(r.ok()) << "case " << i << " (" << cases[i].want << ") loaded";
    EXPECT_EQ(r.status().message().rfind(path + ": " + cases[i].want, 0), 0u)
        << "case " << i << "\n  want: " << cases[i].want << "\n  got:  " << r.status().message();
  }
}

// The quantizer spec plus a bf16 output y [M, K] and i32 inputs ids [M, 4] (topk_ids) and
// offs [8] (group_offsets), all valid: the cases below break one thing each.
Json RichSpec() {
  Json j = ReadJson(kSpec);
  j["tensors"].push_back({{"name", "ids"}, {"dtype", "i32"}, {"shape", {"M", 4}},
                          {"role", "input"},
                          {"init", {{"dist", "topk_ids"}, {"experts", "K / 8"}, {"k", 4},
                                    {"skew", 1.2}}}});
  j["tensors"].push_back({{"name", "offs"}, {"dtype", "i32"}, {"shape", {8}}, {"role", "input"},
                          {"init", {{"dist", "group_offsets"}, {"total", "M * 32"},
                                    {"align", 16}, {"skew", 1}, {"empty", 0.25}}}});
  j["tensors"].push_back({{"name", "y"}, {"dtype", "bf16"}, {"shape", {"M", "K"}},
                          {"role", "output"}});
  j["tensors"][0]["init"] = {{"dist", "normal_outliers"}, {"stddev", 2},
                             {"outlier_fraction", 0.01}, {"outlier_scale", 1000}};
  j["tolerance"]["q"] = {{"kind", "mx_data"}, {"scales", "scales"}, {"max_ulp", 2}};
  j["tolerance"]["scales"] = {{"kind", "mx_scales"}, {"data", "q"}};
  j["tolerance"]["y"] = {{"kind", "gemm"}, {"rel_frobenius", 1e-3}};
  return j;
}

TEST_F(SpecTest, ToleranceKindsAndInitDistsParse) {
  const auto r = LoadProblem(WriteProblem("mxfp8_quantize_rowwise", RichSpec().dump(2)));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Tolerance& q = r->tolerance.at("q");
  EXPECT_EQ(q.kind, ToleranceKind::kMxData);
  EXPECT_EQ(q.partner, "scales");
  EXPECT_EQ(q.max_ulp, 2);
  EXPECT_DOUBLE_EQ(q.scale_mismatch_fraction, 0.001);
  EXPECT_EQ(r->tolerance.at("scales").kind, ToleranceKind::kMxScales);
  EXPECT_EQ(r->tolerance.at("scales").partner, "q");
  const Tolerance& y = r->tolerance.at("y");
  EXPECT_EQ(y.kind, ToleranceKind::kGemm);
  EXPECT_DOUBLE_EQ(y.rel_frobenius, 1e-3);
  EXPECT_DOUBLE_EQ(y.elem_rtol, 1.0 / 128);  // defaults kept
  EXPECT_DOUBLE_EQ(y.elem_rms, 1.0 / 256);
  EXPECT_DOUBLE_EQ(y.elem_fraction, 0.9999);
  EXPECT_DOUBLE_EQ(y.worst_rms, 0.05);
  const InitSpec& x = r->FindTensor("x")->init;
  EXPECT_EQ(x.dist, "normal_outliers");
  EXPECT_DOUBLE_EQ(x.stddev, 2);
  EXPECT_DOUBLE_EQ(x.outlier_fraction, 0.01);
  EXPECT_DOUBLE_EQ(x.outlier_scale, 1000);
  const InitSpec& ids = r->FindTensor("ids")->init;
  EXPECT_EQ(ids.dist, "topk_ids");
  EXPECT_EQ(ids.experts, "K / 8");
  EXPECT_EQ(ids.k, "4");
  EXPECT_DOUBLE_EQ(ids.skew, 1.2);
  const InitSpec& offs = r->FindTensor("offs")->init;
  EXPECT_EQ(offs.total, "M * 32");
  EXPECT_EQ(offs.align, 16);
  EXPECT_DOUBLE_EQ(offs.empty, 0.25);

  // The other kinds, one at a time on y.
  struct Ok {
    Json tol;
    ToleranceKind kind;
  };
  for (const Ok& c : std::vector<Ok>{
           {Json{{"kind", "ulp"}, {"max", 2}}, ToleranceKind::kUlp},
           {Json{{"kind", "close"}, {"rtol", 0.01}, {"atol", 1e-5}}, ToleranceKind::kClose},
           {Json{{"kind", "close"}, {"atol", 0}}, ToleranceKind::kClose},
           {Json{{"kind", "custom"}, {"checker", "topk_sets"}, {"options", {{"tie", 1e-6}}}},
            ToleranceKind::kCustom},
           {Json{{"kind", "exact"}}, ToleranceKind::kExact},
       }) {
    Json j = RichSpec();
    j["tolerance"]["y"] = c.tol;
    const auto s = LoadProblem(WriteProblem("mxfp8_quantize_rowwise", j.dump()));
    ASSERT_TRUE(s.ok()) << c.tol.dump() << ": " << s.status().message();
    EXPECT_EQ(s->tolerance.at("y").kind, c.kind) << c.tol.dump();
    EXPECT_EQ(ToleranceKindName(s->tolerance.at("y").kind), c.tol["kind"].get<std::string>());
  }
  Json j = RichSpec();
  j["tolerance"]["y"] = {
      {"kind", "custom"}, {"checker", "topk_sets"}, {"options", {{"tie", 1e-6}}}};
  const auto s = LoadProblem(WriteProblem("mxfp8_quantize_rowwise", j.dump()));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->tolerance.at("y").checker, "topk_sets");
  EXPECT_DOUBLE_EQ(s->tolerance.at("y").options.at("tie"), 1e-6);
}

TEST_F(SpecTest, BadTolerancesAndInitsNameTheField) {
  struct Case {
    std::function<void(Json&)> mutate;
    const char* want;  // after "<path>: "
  };
  const std::vector<Case> cases = {
      {[](Json& j) { j["tolerance"]["y"] = {{"kind", "fuzzy"}}; },
       "tolerance.y.kind: unknown tolerance kind 'fuzzy'"},
      {[](Json& j) { j["tolerance"]["y"] = Json::object(); },
       "tolerance.y.kind: missing required field"},
      {[](Json& j) { j["tolerance"]["y"] = 3; }, "tolerance.y: must be \"exact\" or an object"},
      {[](Json& j) { j["tolerance"]["y"] = {{"kind", "ulp"}}; },
       "tolerance.y.max: missing required field"},
      {[](Json& j) { j["tolerance"]["y"] = {{"kind", "ulp"}, {"max", -1}}; },
       "tolerance.y.max: must be in [0, 2^24]"},
      {[](Json& j) { j["tolerance"]["y"] = {{"kind", "ulp"}, {"max", 1.5}}; },
       "tolerance.y.max: must be an integer"},
      {[](Json& j) { j["tolerance"]["q"] = {{"kind", "ulp"}, {"max", 1}}; },
       "tolerance.q.kind: 'ulp' needs a bf16, f16 or f32 output, not fp8_e4m3 ('q')"},
      {[](Json& j) { j["tolerance"]["y"] = {{"kind", "close"}}; },
       "tolerance.y: 'close' needs rtol, atol or both"},
      {[](Json& j) { j["tolerance"]["y"] = {{"kind", "close"}, {"rtol", -0.1}}; },
       "tolerance.y.rtol: must be >= 0"},
      {[](Json& j) { j["tolerance"]["y"] = {{"kind", "close"}, {"rtol", 0.1}, {"max", 1}}; },
       "tolerance.y.max: unknown key"},
      {[](Json& j) { j["tolerance"]["y"] = {{"kind", "gemm"}, {"elem_fraction", 0}}; },
       "tolerance.y.elem_fraction: must be in (0, 1]"},
      {[](Json& j) { j["tolerance"]["y"] = {{"kind", "gemm"}, {"rel_frob", 0.1}}; },
       "tolerance.y.rel_frob: unknown key"},
      {[](Json& j) { j["tolerance"]["y"] = {{"kind", "gemm"}, {"worst_rms", "big"}}; },
       "tolerance.y.worst_rms: must be a number"},
      {[](Json& j) { j["tolerance"]["q"].erase("scales"); },
       "tolerance.q.scales: missing required field"},
      {[](Json& j) { j["tolerance"]["scales"] = "exact"; },
       "tolerance.q.scales: 'scales' must have the tolerance {\"kind\": \"mx_scales\", "
       "\"data\": \"q\"}"},
      {[](Json& j) { j["tolerance"]["q"] = "exact"; },
       "tolerance.scales.data: 'q' must have the tolerance {\"kind\": \"mx_data\", "
       "\"scales\": \"scales\"}"},
      {[](Json& j) { j["tolerance"]["q"]["scales"] = "x"; },
       "tolerance.q.scales: 'x' is not an output tensor"},
      {[](Json& j) { j["tolerance"]["y"] = {{"kind", "mx_data"}, {"scales", "scales"}}; },
       "tolerance.y.kind: 'mx_data' needs an fp8_e4m3 or fp8_e5m2 output, not bf16 ('y')"},
      {[](Json& j) { j["tolerance"]["y"] = {{"kind", "mx_scales"}, {"data", "q"}}; },
       "tolerance.y.kind: 'mx_scales' needs an e8m0 output, not bf16"},
      {[](Json& j) { j["tolerance"]["q"]["max_ulp"] = 100; },
       "tolerance.q.max_ulp: must be in [0, 64]"},
      {[](Json& j) { j["tolerance"]["q"]["scale_mismatch_fraction"] = 2; },
       "tolerance.q.scale_mismatch_fraction: must be in [0, 1]"},
      {[](Json& j) { j["tensors"][2]["shape"][1] = "K / 16"; },
       "shapes.test[0]: tolerance.q.scales: 'scales' [1, 2] must be 'q' [1, 32] with the last "
       "dimension / 32"},
      {[](Json& j) { j["tolerance"]["y"] = {{"kind", "custom"}}; },
       "tolerance.y.checker: missing required field"},
      {[](Json& j) { j["tolerance"]["y"] = {{"kind", "custom"}, {"checker", "a-b"}}; },
       "tolerance.y.checker: 'a-b' is not an identifier"},
      {[](Json& j) {
         j["tolerance"]["y"] = {{"kind", "custom"}, {"checker", "c"}, {"options", {{"t", "x"}}}};
       },
       "tolerance.y.options.t: must be a number"},
      {[](Json& j) { j["tensors"][3]["init"]["dist"] = "zipf"; },
       "tensors[3].init.dist: unknown distribution 'zipf'"},
      {[](Json& j) { j["tensors"][3]["init"]["experts"] = "E"; },
       "tensors[3].init.experts: unknown symbol 'E'"},
      {[](Json& j) { j["tensors"][3]["init"]["k"] = "M +"; }, "tensors[3].init.k: expression"},
      {[](Json& j) { j["tensors"][3]["init"].erase("k"); },
       "tensors[3].init.k: missing required field"},
      {[](Json& j) { j["tensors"][3]["init"]["skew"] = -1; },
       "tensors[3].init.skew: must be in [0, 16]"},
      {[](Json& j) { j["tensors"][3]["dtype"] = "i64"; },
       "tensors[3].init.dist: 'topk_ids' needs an i32 tensor, not i64"},
      {[](Json& j) { j["tensors"][3]["shape"] = {"M * 4"}; },
       "tensors[3].init.dist: 'topk_ids' needs a 2-D tensor [T, k]"},
      {[](Json& j) { j["tensors"][3]["init"]["experts"] = 2; },
       "shapes.test[0]: tensors[3] (ids).init.k: 4 is not in [0, min(experts = 2, 64)]"},
      {[](Json& j) {
         j["tensors"][3]["init"]["k"] = 65;
         j["tensors"][3]["init"]["experts"] = 1000;
         j["tensors"][3]["shape"][1] = 65;
       },
       "shapes.test[0]: tensors[3] (ids).init.k: 65 is not in [0, min(experts = 1000, 64)]"},
      {[](Json& j) { j["tensors"][3]["shape"][1] = 5; },
       "shapes.test[0]: tensors[3] (ids).init.k: 4 differs from the tensor's last dimension 5"},
      {[](Json& j) { j["tensors"][3]["init"]["experts"] = "K / (M - 1)"; },
       "shapes.test[0]: tensors[3] (ids).init.experts: expression 'K / (M - 1)'"},
      {[](Json& j) { j["tensors"][4]["dtype"] = "bf16"; },
       "tensors[4].init.dist: 'group_offsets' needs an i32 tensor, not bf16"},
      {[](Json& j) { j["tensors"][4]["init"]["total"] = "T"; },
       "tensors[4].init.total: unknown symbol 'T'"},
      {[](Json& j) { j["tensors"][4]["init"]["align"] = 0; },
       "tensors[4].init.align: must be in [1, 2^20]"},
      {[](Json& j) { j["tensors"][4]["init"]["empty"] = 1; },
       "tensors[4].init.empty: must be in [0, 1)"},
      {[](Json& j) { j["tensors"][4]["init"]["total"] = "M * 8"; },
       "shapes.test[0]: tensors[4] (offs).init.total: 8 is not a multiple of align 16"},
      {[](Json& j) { j["tensors"][4]["shape"] = {"M - 1"}; },
       "shapes.test[0]: tensors[4] (offs).init.total: 32 rows in no groups (G = 0)"},
      {[](Json& j) { j["tensors"][4]["init"]["by_param"] = Json::object(); },
       "tensors[4].init.by_param: must be a non-empty object of parameters"},
      {[](Json& j) {
         j["tensors"][4]["init"]["by_param"] = {{"routing", {{"a", {{"skew", 0}}}}}};
       },
       "tensors[4].init.by_param.routing: 'routing' is not a parameter of this problem"},
      {[](Json& j) {
         j["tensors"][4]["init"]["by_param"] = {{"rounding", {{"up", {{"skew", 0}}}}}};
       },
       "tensors[4].init.by_param.rounding.up: 'up' is not a value of 'rounding'"},
      {[](Json& j) {
         j["tensors"][4]["init"]["by_param"] = {{"rounding", {{"floor", {{"total", "M"}}}}}};
       },
       "tensors[4].init.by_param.rounding.floor.total: only numeric fields"},
      {[](Json& j) {
         j["tensors"][4]["init"]["by_param"] = {{"rounding", {{"floor", {{"empty", 1}}}}}};
       },
       "tensors[4].init.by_param.rounding.floor.empty: must be in [0, 1)"},
      {[](Json& j) {
         j["tensors"][3]["init"]["by_param"] = {{"rounding", {{"floor", {{"empty", 0.5}}}}}};
       },
       "tensors[3].init.by_param.rounding.floor"},
      {[](Json& j) { j["tensors"][0]["init"].erase("outlier_scale"); },
       "tensors[0].init.outlier_scale: missing required field"},
      {[](Json& j) { j["tensors"][0]["init"]["outlier_fraction"] = 1.5; },
       "tensors[0].init.outlier_fraction: must be in [0, 1]"},
      {[](Json& j) { j["tensors"][3]["init"] = {{"dist", "normal_outliers"},
                                                 {"outlier_fraction", 0.1},
                                                 {"outlier_scale", 8}}; },
       "tensors[3].init.dist: 'normal_outliers' needs a bf16, f16 or f32 tensor, not i32"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Json j = RichSpec();
    cases[i].mutate(j);
    const std::string path = WriteProblem("mxfp8_quantize_rowwise", j.dump(2));
    const auto r = LoadProblem(path);
    ASSERT_FALSE(r.ok()) << "case " << i << " (" << cases[i].want << ") loaded";
    EXPECT_EQ(r.status().message().rfind(path + ": " + cases[i].want, 0), 0u)
        << "case " << i << "\n  want: " << cases[i].want << "\n  got:  " << r.status().message();
  }
}

TEST_F(SpecTest, GenerateInputIsTheRunnersFormula) {
  const auto r = LoadProblem(WriteProblem("mxfp8_quantize_rowwise", RichSpec().dump(2)));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const SymbolTable sym = BindSymbols(*r, Shape{{{"M", 37}, {"K", 256}}, ""}, {});
  const auto inputs = GenerateInputs(*r, sym, 1234);
  ASSERT_TRUE(inputs.ok()) << inputs.status().message();
  ASSERT_EQ(inputs->size(), 3u);  // x, ids, offs; no outputs

  // x: normal_outliers bf16, tensor position 0; parameters as floats, like the runner's job.
  const HostTensor& x = inputs->at("x");
  EXPECT_EQ(x.dims, (std::vector<int64_t>{37, 256}));
  const WsInitParams px{kWsDistNormalOutliers, 0, 2, 0.01f, 1000, 0, 0, 0};
  for (int64_t i = 0; i < x.numel(); ++i) {
    uint16_t got;
    std::memcpy(&got, x.bytes.data() + 2 * i, 2);
    ASSERT_EQ(got, ws_init_element_p(kWsDtypeBF16, px, 1234, 0, i)) << i;
  }
  // ids: topk_ids [M, 4] over K / 8 = 32 experts, position 3 (generated row-wise on the host).
  const HostTensor& ids = inputs->at("ids");
  const WsInitParams pi{kWsDistTopkIds, 1.2f, 0, 0, 0, 32, 4, 0};
  for (int64_t i = 0; i < ids.numel(); ++i) {
    uint32_t got;
    std::memcpy(&got, ids.bytes.data() + 4 * i, 4);
    ASSERT_EQ(got, ws_init_element_p(kWsDtypeI32, pi, 1234, 3, i)) << i;
  }
  // offs: group_offsets [8] of total M * 32, position 4.
  const HostTensor& offs = inputs->at("offs");
  const WsInitParams po{kWsDistGroupOffsets, 1, 0.25f, 0, 0, 37 * 32, 16, 8};
  for (int64_t i = 0; i < offs.numel(); ++i) {
    int32_t got;
    std::memcpy(&got, offs.bytes.data() + 4 * i, 4);
    ASSERT_EQ(static_cast<uint32_t>(got), ws_init_element_p(kWsDtypeI32, po, 1234, 4, i)) << i;
  }
  int32_t last;
  std::memcpy(&last, offs.bytes.data() + 4 * 7, 4);
  EXPECT_EQ(last, 37 * 32);

  // A shape large enough to be split over threads: still the per-element formula everywhere.
  const SymbolTable big = BindSymbols(*r, Shape{{{"M", 1100}, {"K", 256}}, ""}, {});
  const auto big_inputs = GenerateInputs(*r, big, 99);
  ASSERT_TRUE(big_inputs.ok()) << big_inputs.status().message();
  const HostTensor& bx = big_inputs->at("x");
  for (int64_t i = 0; i < bx.numel(); ++i) {
    uint16_t got;
    std::memcpy(&got, bx.bytes.data() + 2 * i, 2);
    ASSERT_EQ(got, ws_init_element_p(kWsDtypeBF16, px, 99, 0, i)) << i;
  }
  const HostTensor& bids = big_inputs->at("ids");
  for (int64_t i = 0; i < bids.numel(); ++i) {
    uint32_t got;
    std::memcpy(&got, bids.bytes.data() + 4 * i, 4);
    ASSERT_EQ(got, ws_init_element_p(kWsDtypeI32, pi, 99, 3, i)) << i;
  }

  // Another seed, other inputs; asking for an output fails.
  EXPECT_NE(GenerateInputs(*r, sym, 1235)->at("x").bytes, x.bytes);
  EXPECT_FALSE(GenerateInput(*r, sym, 1, 1).ok());
  const auto fields = InitJobFields(*r->FindTensor("ids"), sym);
  ASSERT_TRUE(fields.ok());
  EXPECT_EQ(fields->ints.at("experts"), 32);
  EXPECT_EQ(fields->ints.at("k"), 4);
}

// by_param: the numeric fields an input takes under one value of a parameter (balanced routing);
// the job's fields and the host's inputs follow the setting, the other values keep the base.
TEST_F(SpecTest, ByParamInitFollowsTheSetting) {
  Json j = RichSpec();
  j["tensors"][4]["init"]["by_param"] = {{"rounding", {{"floor", {{"skew", 0}, {"empty", 0}}}}}};
  j["tensors"][3]["init"]["by_param"] = {{"rounding", {{"floor", {{"skew", 3}}}}}};
  const auto r = LoadProblem(WriteProblem("mxfp8_quantize_rowwise", j.dump(2)));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const InitSpec& offs = r->FindTensor("offs")->init;
  ASSERT_EQ(offs.by_param.size(), 1u);
  EXPECT_EQ(offs.by_param[0].param, "rounding");
  EXPECT_DOUBLE_EQ(offs.by_param[0].init->skew, 0);
  EXPECT_EQ(offs.by_param[0].init->total, "M * 32");  // the rest as the base
  EXPECT_EQ(offs.by_param[0].init->align, 16);
  const Shape shape{{{"M", 37}, {"K", 256}}, ""};
  const SymbolTable floor = BindSymbols(*r, shape, {{"rounding", "floor"}});
  const SymbolTable rceil = BindSymbols(*r, shape, {{"rounding", "rceil"}});
  ASSERT_NE(floor.at("rounding"), rceil.at("rounding"));
  const auto f = InitJobFields(*r->FindTensor("offs"), floor);
  const auto c = InitJobFields(*r->FindTensor("offs"), rceil);
  ASSERT_TRUE(f.ok() && c.ok());
  EXPECT_DOUBLE_EQ(f->reals.at("skew"), 0);
  EXPECT_DOUBLE_EQ(f->reals.at("empty"), 0);
  EXPECT_EQ(f->ints.at("total"), 37 * 32);
  EXPECT_DOUBLE_EQ(c->reals.at("skew"), 1);
  EXPECT_DOUBLE_EQ(c->reals.at("empty"), 0.25);
  EXPECT_DOUBLE_EQ(InitJobFields(*r->FindTensor("ids"), floor)->reals.at("skew"), 3);
  EXPECT_DOUBLE_EQ(InitJobFields(*r->FindTensor("ids"), rceil)->reals.at("skew"), 1.2);
  // The host's inputs: the runner's formula with the setting's fields.
  const auto inputs = GenerateInputs(*r, floor, 1234);
  ASSERT_TRUE(inputs.ok()) << inputs.status().message();
  const HostTensor& got = inputs->at("offs");
  const WsInitParams po{kWsDistGroupOffsets, 0, 0, 0, 0, 37 * 32, 16, 8};
  for (int64_t i = 0; i < got.numel(); ++i) {
    int32_t v;
    std::memcpy(&v, got.bytes.data() + 4 * i, 4);
    ASSERT_EQ(static_cast<uint32_t>(v), ws_init_element_p(kWsDtypeI32, po, 1234, 4, i)) << i;
  }
  EXPECT_NE(GenerateInputs(*r, rceil, 1234)->at("offs").bytes, got.bytes);
}

TEST_F(SpecTest, UnmutatedCopyLoadsAndBadJsonFails) {
  std::ifstream in(kSpec);
  std::stringstream text;
  text << in.rdbuf();
  const std::string path = WriteProblem("mxfp8_quantize_rowwise", text.str());
  const auto ok = LoadProblem(path);
  EXPECT_TRUE(ok.ok()) << ok.status().message();

  const std::string bad = WriteProblem("mxfp8_quantize_rowwise", "{\"name\": ");
  const auto r = LoadProblem(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind(bad + ": invalid JSON", 0), 0u) << r.status().message();

  const auto missing = LoadProblem((root_ / "nope" / "spec.json").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot read"), std::string::npos);
}

TEST_F(SpecTest, LoadProblemSetSortsAndPropagatesErrors) {
  Json j = ReadJson(kSpec);
  for (const char* name : {"zeta", "alpha", "mid"}) {
    j["name"] = name;
    WriteProblem(name, j.dump());
  }
  fs::create_directories(root_ / "no_spec_here");
  const auto set = LoadProblemSet(root_.string());
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_EQ(set->size(), 3u);
  EXPECT_EQ((*set)[0].name, "alpha");
  EXPECT_EQ((*set)[1].name, "mid");
  EXPECT_EQ((*set)[2].name, "zeta");

  j["name"] = "broken";
  j["tensors"][0]["dtype"] = "f128";
  WriteProblem("broken", j.dump());
  const auto bad = LoadProblemSet(root_.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("broken/spec.json: tensors[0].dtype: unknown dtype 'f128'"),
            std::string::npos)
      << bad.status().message();

  EXPECT_FALSE(LoadProblemSet((root_ / "absent").string()).ok());
}

}  // namespace
}  // namespace ws
