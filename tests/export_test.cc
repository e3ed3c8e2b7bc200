// `warpsmith export` and `warpsmith verify` end to end: a store holding the hand-tuned
// mxfp8_quantize_rowwise kernel as a ranked evaluation (recorded as a GPU run would record it),
// exported as a CMake package that is then built with CMake and nvcc for sm_90a and sm_100a and
// consumed through find_package, as a torch extension (syntax-checked), and as a bundle that
// `verify` compiles (or, on a GPU, re-runs). Also: the plan-expression translation against the
// expression evaluator, and the errors.
#include "orchestrator/export.h"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "orchestrator/bundle.h"
#include "orchestrator/campaign.h"
#include "orchestrator/store.h"
#include "problems/problems.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct Proc {
  int exit_code = -1;
  std::string out, err;
};

// Through the shell, with the output in files: builds print a lot and may take minutes.
Proc Exec(std::vector<std::string> argv, int seconds = 300) {
  static int counter = 0;
  const std::string base =
      fs::path(testing::TempDir()) /
      ("ws_export_exec_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::string cmd = "timeout " + std::to_string(seconds);
  for (const auto& a : argv) {
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd += " " + q + "'";
  }
  cmd += " > " + base + ".out 2> " + base + ".err";
  const int status = std::system(cmd.c_str());
  Proc r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto out = ReadFile(base + ".out");
  auto err = ReadFile(base + ".err");
  r.out = out.ok() ? *out : "";
  r.err = err.ok() ? *err : "";
  fs::remove(base + ".out");
  fs::remove(base + ".err");
  return r;
}

bool HaveGpu() {
  Proc r = Exec({"/bin/sh", "-c", "nvidia-smi -L"}, 30);
  return r.exit_code == 0 && r.out.find("GPU") != std::string::npos;
}

const std::string kProblem = "mxfp8_quantize_rowwise";

class ExportTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) /
           ("ws_export_" + std::to_string(::getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "ws");
    auto spec = LoadProblem(std::string(WS_SOURCE_DIR) + "/problems/" + kProblem + "/spec.json");
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    spec_ = *spec;
  }
  void TearDown() override {
    if (!HasFailure())
      fs::remove_all(dir_);
  }

  Proc Warpsmith(std::vector<std::string> args) {
    std::vector<std::string> argv = {std::string(WS_BINARY_DIR) + "/warpsmith", "--workspace",
                                     (dir_ / "ws").string(), "--problems-dir",
                                     std::string(WS_SOURCE_DIR) + "/problems"};
    argv.insert(argv.end(), args.begin(), args.end());
    return Exec(argv, 600);
  }

  // Records `file` as an evaluation the way a finished GPU run is recorded (RecordEvaluation):
  // `ranked` gives an ok verdict with hidden shapes and bench timings; otherwise a compile-only
  // not_run.
  void Record(const std::string& file, const std::map<std::string, std::string>& params,
              const std::map<std::string, int64_t>& knobs, bool ranked) {
    auto store = Store::Open((dir_ / "ws" / "warpsmith.db").string());
    ASSERT_TRUE(store.ok()) << store.status().message();
    auto source = ReadFile(file);
    ASSERT_TRUE(source.ok());
    EvalRequest req;
    req.spec = &spec_;
    req.source = *source;
    req.params = params;
    req.knobs = knobs;
    req.arch = Arch::kSm90a;
    req.compile_only = !ranked;
    EvalResult r;
    r.knobs = knobs;
    // What Evaluate reports: the device-library headers the source includes.
    r.library_headers = LibraryClosure(*source, KernelLibraryDir());
    if (ranked) {
      r.verdict = Verdict::kOk;
      DeviceInfo d;
      d.name = "NVIDIA H200";
      d.arch = "sm_90a";
      d.driver = "580.159.04";
      r.device = d;
      r.ran_on_gpu = true;
      double t = 400;
      for (const auto& s : spec_.bench_shapes) {
        CaseResult c;
        c.kind = "bench";
        c.shape = s;
        Timing tm;
        tm.median_us = t;
        tm.min_us = t * 0.99;
        tm.p90_us = t * 1.01;
        tm.stdev_us = t * 0.004;
        tm.iterations = 200;
        c.timing = tm;
        c.sol_us = t * 0.97;
        r.cases.push_back(c);
        t /= 2;
      }
      r.geomean_us = 141.42;
      r.sol_fraction = 0.97;
    } else {
      r.verdict = Verdict::kNotRun;
    }
    RecordContext ctx;
    ctx.origin = "file:" + file;
    auto rec = RecordEvaluation(**store, req, r, ctx, ranked ? 12.5 : 0);
    ASSERT_TRUE(rec.ok()) << rec.status().message();
    ASSERT_EQ(rec->ranked, ranked);
  }

  // Records `source` as an unverified bf16_gemm kernel, exports it as a CMake package under
  // OUT_NAME and returns its generated launcher, after checking it compiles as plain C++ (-Wall).
  std::string ExportBf16GemmLauncher(const std::string& source, const std::string& out_name) {
    const std::string file = (dir_ / (out_name + ".cu")).string();
    auto spec = LoadProblem(std::string(WS_SOURCE_DIR) + "/problems/bf16_gemm/spec.json");
    auto store = Store::Open((dir_ / "ws" / "warpsmith.db").string());
    if (!WriteFileAtomic(file, source).ok() || !spec.ok() || !store.ok()) {
      ADD_FAILURE() << "setting up " << file;
      return "";
    }
    EvalRequest req;
    req.spec = &*spec;
    req.source = source;
    req.arch = Arch::kSm90a;
    req.compile_only = true;
    EvalResult r;
    r.verdict = Verdict::kNotRun;
    RecordContext ctx;
    ctx.origin = "file:" + file;
    EXPECT_TRUE(RecordEvaluation(**store, req, r, ctx, 0).ok());
    store->reset();  // the export below opens the store itself
    const fs::path out = dir_ / out_name;
    Proc x = Warpsmith({"export", "--problem", "bf16_gemm", "--include-unverified", "--out",
                        out.string(), "--format", "cmake"});
    EXPECT_EQ(x.exit_code, 0) << x.out << x.err;
    auto manifest = ReadFile((out / "MANIFEST.json").string());
    auto m = json::parse(manifest.ok() ? *manifest : std::string("{}"));
    if (m["kernels"].size() != 1u) {
      ADD_FAILURE() << "expected one exported kernel: " << m.dump();
      return "";
    }
    const std::string fn = m["kernels"][0]["function"].get<std::string>();
    const fs::path launcher = out / "src" / (fn + ".launch.cc");
    Proc cc = Exec({"/usr/bin/c++", "-std=c++17", "-fsyntax-only", "-Wall", "-I",
                    (out / "include").string(), "-I", "/usr/local/cuda/include",
                    launcher.string(), (out / "src" / "common.cc").string()});
    EXPECT_EQ(cc.exit_code, 0) << cc.err.substr(0, 5000);
    auto text = ReadFile(launcher.string());
    return text.ok() ? *text : std::string();
  }

  std::string TunedKernel() const {
    return std::string(WS_SOURCE_DIR) + "/kernels/" + kProblem + "/kernel.cu";
  }
  std::string StartingKernel() const {
    return std::string(WS_SOURCE_DIR) + "/problems/" + kProblem + "/starting.cu";
  }

  // The ranked hand-tuned kernel (rceil, non-default knobs) and an unverified floor variant.
  void Populate() {
    Record(TunedKernel(), {{"rounding", "rceil"}},
           {{"CHUNKS", 4},
            {"THREADS", 256},
            {"LOAD_HINT", 0},
            {"STORE_CS", 1},
            {"SCALE_STORE", 0},
            {"CTAS_PER_SM", 1048576}},
           /*ranked=*/true);
    Record(StartingKernel(), {{"rounding", "floor"}}, {}, /*ranked=*/false);
  }

  fs::path dir_;
  ProblemSpec spec_;
};

TEST_F(ExportTest, ClearErrors) {
  Proc empty = Warpsmith(
      {"export", "--problem", kProblem, "--out", (dir_ / "o").string(), "--format", "cmake"});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("nothing to export"), std::string::npos) << empty.err;
  EXPECT_NE(empty.err.find("--include-unverified"), std::string::npos) << empty.err;

  Populate();
  Proc unknown = Warpsmith(
      {"export", "--problem", "nope*", "--out", (dir_ / "o").string(), "--format", "cmake"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no problem matches 'nope*'"), std::string::npos) << unknown.err;

  Proc format = Warpsmith({"export", "--all", "--out", (dir_ / "o").string(), "--format", "zip"});
  EXPECT_EQ(format.exit_code, 2);
  EXPECT_NE(format.err.find("--format must be cmake, torch or bundle, not 'zip'"),
            std::string::npos)
      << format.err;

  Proc neither = Warpsmith({"export", "--out", (dir_ / "o").string(), "--format", "cmake"});
  EXPECT_EQ(neither.exit_code, 2);
  EXPECT_NE(neither.err.find("--problem GLOB"), std::string::npos) << neither.err;

  Proc gpu = Warpsmith({"export", "--all", "--gpu", "NVIDIA B200", "--out", (dir_ / "o").string(),
                        "--format", "cmake"});
  EXPECT_EQ(gpu.exit_code, 2);
  EXPECT_NE(gpu.err.find("ranked on: NVIDIA H200"), std::string::npos) << gpu.err;

  fs::create_directories(dir_ / "full");
  std::ofstream(dir_ / "full" / "x") << "x";
  Proc full =
      Warpsmith({"export", "--all", "--out", (dir_ / "full").string(), "--format", "bundle"});
  EXPECT_EQ(full.exit_code, 2);
  EXPECT_NE(full.err.find("not empty"), std::string::npos) << full.err;

  Proc verify = Warpsmith({"verify", (dir_ / "nowhere").string()});
  EXPECT_EQ(verify.exit_code, 2);
  EXPECT_NE(verify.err.find("not a bundle folder"), std::string::npos) << verify.err;
}

// Only verified kernels by default; --include-unverified adds the floor variant, marked.
TEST_F(ExportTest, UnverifiedExcludedByDefault) {
  Populate();
  Proc a = Warpsmith(
      {"export", "--problem", "mxfp8_*", "--out", (dir_ / "a").string(), "--format", "bundle"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto m = json::parse(ReadFile((dir_ / "a" / "MANIFEST.json").string()).value());
  ASSERT_EQ(m["kernels"].size(), 1u) << m.dump(2);
  EXPECT_EQ(m["kernels"][0]["function"], kProblem);
  EXPECT_TRUE(m["kernels"][0]["verified"].get<bool>());
  EXPECT_EQ(m["gpu"], "NVIDIA H200");

  Proc b = Warpsmith({"export", "--problem", kProblem, "--include-unverified", "--out",
                      (dir_ / "b").string(), "--format", "bundle"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("mxfp8_quantize_rowwise__floor"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("UNVERIFIED"), std::string::npos) << b.out;
  m = json::parse(ReadFile((dir_ / "b" / "MANIFEST.json").string()).value());
  ASSERT_EQ(m["kernels"].size(), 2u);
  EXPECT_FALSE(m["kernels"][1]["verified"].get<bool>());
  EXPECT_EQ(m["kernels"][1]["params"]["rounding"], "floor");
  const std::string readme = ReadFile((dir_ / "b" / "README.md").string()).value();
  EXPECT_NE(readme.find("UNVERIFIED"), std::string::npos) << readme;
}

// The generated C++ of plan expressions computes what the expression evaluator computes, errors
// included (overflow, division by zero, pow2/log2_floor ranges, short-circuits).
TEST_F(ExportTest, ExpressionTranslationMatchesTheEvaluator) {
  const std::vector<std::string> exprs = {
      "ceil_div(M * K, 8 * 4 * 256)",
      "min(ceil_div(M * K, 8 * 2 * 512), 132 * 1048576)",
      "round_up(M, 128) / 32 % 7",
      "-M + K - -3",
      "M * K * K * K * K",
      "K / (M - M)",
      "M % (K - K)",
      "M == 0 || K / M > 2",
      "M != 0 && K / M > 2",
      "!(M < K) + (M >= K) * 10 + (M <= 3) * 100 + (K > 5) * 1000",
      "pow2(log2_floor(K))",
      "pow2(M)",
      "log2_floor(M - 5)",
      "max(M, K) - min(M, K)",
      "ceil_div(-M, 4) + ceil_div(M, -4) + round_up(-M, 4)",
      "(9223372036854775807 - M) + K",
  };
  const std::vector<std::pair<int64_t, int64_t>> values = {
      {0, 32}, {1, 64}, {3, 96}, {37, 256}, {65, 7}, {131072, 7168}, {4611686018427387904, 3}};
  std::string program =
      "#include <cstdio>\n#include \"warpsmith/detail/plan_runtime.h\"\n"
      "namespace wsd = ::warpsmith::detail;\n"
      "void Print(const wsd::Eval& e, int64_t v) {\n"
      "  if (e.error) std::printf(\"error\\n\"); else std::printf(\"%lld\\n\", (long long)v);\n}\n"
      "int main() {\n  const int64_t vals[][2] = {";
  for (auto [m, k] : values) program += fmt::format("{{{}, {}}}, ", m, k);
  program += "};\n  for (const auto& mk : vals) {\n    const int64_t v_M = mk[0], v_K = mk[1];\n";
  std::string want;
  for (const auto& e : exprs) {
    auto cpp = ExprToCpp(e);
    ASSERT_TRUE(cpp.ok()) << cpp.status().message();
    program += fmt::format("    {{ wsd::Eval e; const int64_t v = {}; Print(e, v); }}\n", *cpp);
  }
  program += "  }\n}\n";
  for (auto [m, k] : values) {
    for (const auto& e : exprs) {
      auto v = EvalExpr(e, SymbolTable{{"M", m}, {"K", k}});
      want += v.ok() ? std::to_string(*v) + "\n" : "error\n";
    }
  }
  EXPECT_FALSE(ExprToCpp("M +").ok());
  EXPECT_FALSE(ExprToCpp("frob(M)").ok());

  // The runtime header as the package ships it.
  fs::create_directories(dir_ / "pkg");
  Populate();
  Proc x = Warpsmith({"export", "--problem", kProblem, "--out", (dir_ / "pkg" / "out").string(),
                      "--format", "cmake"});
  ASSERT_EQ(x.exit_code, 0) << x.err;
  ASSERT_TRUE(WriteFileAtomic((dir_ / "expr.cc").string(), program).ok());
  Proc cc = Exec({"/usr/bin/c++", "-std=c++17", "-O1", "-I", (dir_ / "pkg/out/include").string(),
                  "-I", "/usr/local/cuda/include", "-o", (dir_ / "expr").string(),
                  (dir_ / "expr.cc").string()});
  ASSERT_EQ(cc.exit_code, 0) << cc.err;
  Proc run = Exec({(dir_ / "expr").string()});
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out, want);
}

// The cmake package builds with CMake and nvcc for sm_90a and sm_100a, installs, and is found by
// find_package; its test runs on a GPU or says plainly that there is none.
TEST_F(ExportTest, CmakePackageBuildsAndIsFound) {
  Populate();
  const fs::path pkg = dir_ / "pkg";
  Proc x = Warpsmith({"export", "--problem", kProblem, "--out", pkg.string(), "--format", "cmake"});
  ASSERT_EQ(x.exit_code, 0) << x.err;
  EXPECT_NE(x.out.find("exported 1 kernel(s)"), std::string::npos) << x.out;

  auto m = json::parse(ReadFile((pkg / "MANIFEST.json").string()).value());
  ASSERT_EQ(m["kernels"].size(), 1u);
  const json& k = m["kernels"][0];
  EXPECT_EQ(k["problem"], kProblem);
  EXPECT_EQ(k["params"]["rounding"], "rceil");
  const std::string tuned = ReadFile(TunedKernel()).value();
  EXPECT_EQ(k["kernel"]["hash"], KernelHash(tuned, LibraryClosure(tuned, KernelLibraryDir())));
  EXPECT_EQ(k["evaluation"]["verdict"], "ok");
  EXPECT_EQ(k["evaluation"]["gpu"], "NVIDIA H200");
  EXPECT_EQ(k["knobs"]["CHUNKS"], 4);
  EXPECT_EQ(k["knobs"]["THREADS"], 256);
  const std::string header = ReadFile((pkg / "include/warpsmith/kernels.h").string()).value();
  EXPECT_NE(header.find("cudaError_t mxfp8_quantize_rowwise(const uint16_t* x, uint8_t* q, "
                        "uint8_t* scales, int64_t M, int64_t K, cudaStream_t stream = nullptr);"),
            std::string::npos)
      << header;
  const std::string cmake = ReadFile((pkg / "CMakeLists.txt").string()).value();
  EXPECT_NE(cmake.find("CHUNKS=4;CTAS_PER_SM=1048576"), std::string::npos) << cmake;
  EXPECT_NE(cmake.find("90a;100a"), std::string::npos);
  // Hidden shapes stay out of the package.
  const std::string spec =
      ReadFile((pkg / "reference/problems" / kProblem / "spec.json").string()).value();
  EXPECT_EQ(spec.find("hidden"), std::string::npos);

  const fs::path build = dir_ / "build";
  const std::string cmake_bin = "/usr/bin/cmake";
  Proc cfg = Exec({"/usr/bin/env", cmake_bin, "-S", pkg.string(), "-B", build.string(),
                   "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc"},
                  600);
  ASSERT_EQ(cfg.exit_code, 0) << cfg.out << cfg.err;
  Proc bld = Exec({"/usr/bin/env", cmake_bin, "--build", build.string(), "-j2"}, 1800);
  ASSERT_EQ(bld.exit_code, 0) << bld.out.substr(bld.out.size() > 20000 ? bld.out.size() - 20000 : 0)
                              << bld.err;
  // Both architectures, from the package's CMAKE_CUDA_ARCHITECTURES default; the exported knob
  // and parameter values as -D defines.
  const fs::path objdir = build / "CMakeFiles" / "warpsmith_kernels.dir";
  const std::string flags = ReadFile((objdir / "flags.make").string()).value();
  EXPECT_NE(flags.find("code=[compute_90a,sm_90a]"), std::string::npos) << flags;
  EXPECT_NE(flags.find("code=[compute_100a,sm_100a]"), std::string::npos) << flags;
  const std::string rules = ReadFile((objdir / "build.make").string()).value();
  EXPECT_NE(rules.find("-DCHUNKS=4"), std::string::npos);
  EXPECT_NE(rules.find("-DTHREADS=256"), std::string::npos);
  EXPECT_NE(rules.find("-DWS_ROUNDING=0"), std::string::npos);
  const std::string object =
      ReadFile((objdir / "src" / (kProblem + ".kernel.cu.o")).string()).value();
  EXPECT_NE(object.find("sm_90a"), std::string::npos);
  EXPECT_NE(object.find("sm_100a"), std::string::npos);

  ASSERT_TRUE(fs::exists(build / "warpsmith_kernels_test"));
  Proc test = Exec({(build / "warpsmith_kernels_test").string()}, 600);
  if (HaveGpu()) {
    EXPECT_EQ(test.exit_code, 0) << test.out << test.err;
    EXPECT_NE(test.out.find(", 0 failed"), std::string::npos) << test.out;
  } else {
    EXPECT_EQ(test.exit_code, 77) << test.out << test.err;
    EXPECT_NE(test.out.find("no GPU"), std::string::npos) << test.out;
    EXPECT_NE(test.out.find("SKIPPED"), std::string::npos) << test.out;
  }

  // Installed, and consumed by another project through find_package.
  const fs::path prefix = dir_ / "prefix";
  Proc inst =
      Exec({"/usr/bin/env", cmake_bin, "--install", build.string(), "--prefix", prefix.string()});
  ASSERT_EQ(inst.exit_code, 0) << inst.out << inst.err;
  const fs::path consumer = dir_ / "consumer";
  fs::create_directories(consumer);
  std::ofstream(consumer / "CMakeLists.txt")
      << "cmake_minimum_required(VERSION 3.24)\nproject(consumer LANGUAGES CXX)\n"
         "find_package(warpsmith_kernels REQUIRED)\n"
         "add_executable(consumer main.cc)\n"
         "target_link_libraries(consumer PRIVATE warpsmith::kernels)\n";
  // M = 0 violates the problem's constraint M >= 1: refused on the host, before any device call.
  std::ofstream(consumer / "main.cc")
      << "#include <cstdio>\n#include <warpsmith/kernels.h>\n"
         "int main() {\n"
         "  cudaError_t e = warpsmith::mxfp8_quantize_rowwise(nullptr, nullptr, nullptr, 0, 64);\n"
         "  std::printf(\"%d %s\\n\", e == cudaErrorInvalidValue, warpsmith::last_error());\n"
         "  return 0;\n}\n";
  Proc ccfg =
      Exec({"/usr/bin/env", cmake_bin, "-S", consumer.string(), "-B", (consumer / "build").string(),
            "-DCMAKE_PREFIX_PATH=" + prefix.string(), "-DCUDAToolkit_ROOT=/usr/local/cuda"},
           600);
  ASSERT_EQ(ccfg.exit_code, 0) << ccfg.out << ccfg.err;
  Proc cbld = Exec({"/usr/bin/env", cmake_bin, "--build", (consumer / "build").string()}, 600);
  ASSERT_EQ(cbld.exit_code, 0) << cbld.out << cbld.err;
  Proc crun = Exec({(consumer / "build" / "consumer").string()});
  EXPECT_EQ(crun.exit_code, 0);
  EXPECT_EQ(crun.out, "1 mxfp8_quantize_rowwise: constraint M >= 1: the shape violates it\n");
}

// The torch extension: Python that compiles, the op schema, and (where torch is installed) C++
// that compiles against torch's headers.
TEST_F(ExportTest, TorchExtensionIsWellFormed) {
  Populate();
  const fs::path out = dir_ / "torch";
  Proc x = Warpsmith({"export", "--problem", kProblem, "--out", out.string(), "--format", "torch"});
  ASSERT_EQ(x.exit_code, 0) << x.err;
  for (const char* f : {"setup.py", "warpsmith_kernels/__init__.py", "test_ops.py"}) {
    Proc py = Exec({"/usr/bin/python3", "-m", "py_compile", (out / f).string()});
    EXPECT_EQ(py.exit_code, 0) << f << "\n" << py.err;
  }
  const std::string ops = ReadFile((out / "warpsmith_kernels/csrc/ops.cc").string()).value();
  EXPECT_NE(ops.find("TORCH_LIBRARY(warpsmith, m)"), std::string::npos);
  EXPECT_NE(ops.find("m.def(\"mxfp8_quantize_rowwise(Tensor x) -> (Tensor, Tensor)\")"),
            std::string::npos)
      << ops;
  EXPECT_NE(ops.find("at::kFloat8_e4m3fn"), std::string::npos);
  // The torch build compiles device code with the defines inline.
  const std::string unit =
      ReadFile((out / "warpsmith_kernels/csrc/src/mxfp8_quantize_rowwise.kernel.cu").string())
          .value();
  EXPECT_NE(unit.find("#define CHUNKS 4"), std::string::npos) << unit;
  EXPECT_NE(unit.find("#define WS_ROUNDING 0"), std::string::npos) << unit;
  // setup.py's include folders hold from any working folder (torch's ninja build compiles
  // from its build folder): run it with setuptools and torch stubbed, from /.
  const std::string stub = R"PY(
import os, sys, types
captured = {}
st = types.ModuleType("setuptools"); st.setup = lambda **kw: captured.update(kw)
ce = types.ModuleType("torch.utils.cpp_extension")
ce.BuildExtension = object; ce.CUDAExtension = lambda **kw: kw
for name, mod in (("setuptools", st), ("torch", types.ModuleType("torch")),
                  ("torch.utils", types.ModuleType("torch.utils")),
                  ("torch.utils.cpp_extension", ce)):
    sys.modules[name] = mod
path = sys.argv[1]
os.chdir("/")
exec(compile(open(path).read(), path, "exec"), {"__file__": path, "__name__": "__main__"})
dirs = [d for e in captured["ext_modules"] for d in e["include_dirs"]]
assert any(os.path.isfile(os.path.join(d, "warpsmith", "detail", "plan_runtime.h")) for d in dirs), dirs
assert all(os.path.isabs(d) and os.path.isdir(d) for d in dirs), dirs
print("include dirs ok")
)PY";
  Proc setup = Exec({"/usr/bin/python3", "-c", stub, (out / "setup.py").string()});
  EXPECT_EQ(setup.exit_code, 0) << setup.out << setup.err;
  // The generated launchers compile as plain C++ (the torch build reuses them).
  Proc launcher =
      Exec({"/usr/bin/c++", "-std=c++17", "-fsyntax-only", "-I",
            (out / "warpsmith_kernels/csrc/include").string(), "-I", "/usr/local/cuda/include",
            (out / "warpsmith_kernels/csrc/src/mxfp8_quantize_rowwise.launch.cc").string()});
  EXPECT_EQ(launcher.exit_code, 0) << launcher.err;

  Proc torch = Exec({"/usr/bin/python3", "-c",
                     "import torch.utils.cpp_extension as c; print(' '.join(c.include_paths()))"});
  if (torch.exit_code != 0) {
    std::printf("torch is not installed here: ops.cc not compiled (Python checked only)\n");
    return;
  }
  std::vector<std::string> argv = {"/usr/bin/c++", "-std=c++17", "-fsyntax-only"};
  std::istringstream paths(torch.out);
  for (std::string p; paths >> p;) {
    argv.push_back("-I");
    argv.push_back(p);
  }
  for (const std::string& p : {(out / "warpsmith_kernels/csrc/include").string(),
                               std::string("/usr/local/cuda/include")}) {
    argv.push_back("-I");
    argv.push_back(p);
  }
  argv.push_back((out / "warpsmith_kernels/csrc/ops.cc").string());
  Proc cc = Exec(argv, 600);
  EXPECT_EQ(cc.exit_code, 0) << cc.err;
}

// A bundle holds source, plan, build flags, toolchain, device and timings; `verify` compiles it
// for both architectures without a GPU (saying it cannot re-time) and refuses a tampered source.
TEST_F(ExportTest, BundleAndVerify) {
  Populate();
  const fs::path out = dir_ / "bundles";
  Proc x = Warpsmith({"export", "--all", "--out", out.string(), "--format", "bundle"});
  ASSERT_EQ(x.exit_code, 0) << x.err;
  const fs::path b = out / kProblem;
  auto j = json::parse(ReadFile((b / "bundle.json").string()).value());
  EXPECT_EQ(j["format"], "warpsmith-bundle-1");
  const std::string source = ReadFile((b / "kernel.cu").string()).value();
  EXPECT_EQ(j["kernel"]["hash"],
            KernelHash(source, LibraryClosure(source, (b / "library").string())));
  EXPECT_FALSE(LibraryClosure(source, (b / "library").string()).empty())
      << "the hand-tuned kernel includes the device library; the bundle carries it";
  EXPECT_EQ(j["build"]["arch"], "sm_90a");
  EXPECT_EQ(j["build"]["defines"]["CHUNKS"], "4");
  EXPECT_EQ(j["build"]["defines"]["WS_ROUNDING_FLOOR"], "1");
  EXPECT_FALSE(j["build"]["nvrtc_version"].get<std::string>().empty());
  EXPECT_EQ(j["device"]["gpu"], "NVIDIA H200");
  EXPECT_EQ(j["device"]["driver"], "580.159.04");
  EXPECT_EQ(j["evaluation"]["verdict"], "ok");
  ASSERT_EQ(j["evaluation"]["timings"].size(), 4u);
  EXPECT_DOUBLE_EQ(j["evaluation"]["timings"][0]["median_us"].get<double>(), 400);
  EXPECT_TRUE(fs::exists(b / "plan.json"));
  EXPECT_TRUE(fs::exists(b / "problem" / kProblem / "spec.json"));
  EXPECT_TRUE(fs::exists(b / "problem" / kProblem / "reference.cu"));

  Proc v = Warpsmith({"verify", out.string()});
  if (!HaveGpu()) {
    EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
    EXPECT_NE(v.out.find("sm_90a: compiled, plan valid"), std::string::npos) << v.out;
    EXPECT_NE(v.out.find("sm_100a: compiled, plan valid"), std::string::npos) << v.out;
    EXPECT_NE(v.out.find("cannot re-check or re-time"), std::string::npos) << v.out;
  } else {
    // The recorded times are made up: on a GPU the verdict reproduces, the times do not.
    EXPECT_NE(v.out.find("verdict ok (recorded ok)"), std::string::npos) << v.out;
  }

  std::string src = ReadFile((b / "kernel.cu").string()).value();
  ASSERT_TRUE(WriteFileAtomic((b / "kernel.cu").string(), src + "\n// tampered\n").ok());
  Proc t = Warpsmith({"verify", b.string()});
  EXPECT_EQ(t.exit_code, 1) << t.out << t.err;
  EXPECT_NE(t.out.find("do not hash to the recorded sha256"), std::string::npos) << t.out;
}

// A kernel that includes the device library: its bundle carries the headers it was verified with
// and verify compiles against those; the packages inline them.
TEST_F(ExportTest, LibraryHeadersTravelWithTheKernel) {
  const std::string file = (dir_ / "with_library.cu").string();
  const std::string source =
      "#include \"ws/mx.cuh\"\n" + ReadFile(TunedKernel()).value();
  ASSERT_TRUE(WriteFileAtomic(file, source).ok());
  const LibraryHeaders headers = LibraryClosure(source, KernelLibraryDir());
  ASSERT_EQ(headers.count("ws/mx.cuh"), 1u);
  Record(file, {{"rounding", "rceil"}}, {}, /*ranked=*/true);

  const fs::path out = dir_ / "bundles";
  Proc x = Warpsmith({"export", "--all", "--out", out.string(), "--format", "bundle"});
  ASSERT_EQ(x.exit_code, 0) << x.err;
  const fs::path b = out / kProblem;
  auto j = json::parse(ReadFile((b / "bundle.json").string()).value());
  EXPECT_EQ(j["kernel"]["hash"], KernelHash(source, headers));
  EXPECT_NE(j["kernel"]["hash"], Sha256Hex(source));
  EXPECT_EQ(ReadFile((b / "library/ws/mx.cuh").string()).value(), headers.at("ws/mx.cuh"));
  if (!HaveGpu()) {
    Proc v = Warpsmith({"verify", b.string()});
    EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
    EXPECT_NE(v.out.find("sm_100a: compiled, plan valid"), std::string::npos) << v.out;
  }
  // A header edited after the verdict is a different kernel.
  ASSERT_TRUE(WriteFileAtomic((b / "library/ws/mx.cuh").string(),
                              headers.at("ws/mx.cuh") + "\n// edited\n")
                  .ok());
  Proc t = Warpsmith({"verify", b.string()});
  EXPECT_EQ(t.exit_code, 1) << t.out << t.err;
  EXPECT_NE(t.out.find("do not hash to the recorded sha256"), std::string::npos) << t.out;

  const fs::path pkg = dir_ / "pkg";
  Proc c = Warpsmith({"export", "--all", "--out", pkg.string(), "--format", "cmake"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::string unit;
  for (const auto& e : fs::directory_iterator(pkg / "src" / "kernels")) {
    unit += ReadFile(e.path().string()).value();
  }
  EXPECT_NE(unit.find("ws/mx.cuh (warpsmith device library, inlined)"), std::string::npos);
  EXPECT_NE(unit.find("rceil_scale"), std::string::npos);
  EXPECT_EQ(unit.find("#include \"ws/"), std::string::npos) << "the package is self-contained";
}

// Every problem's starting kernel (multi-launch plans, workspaces, i64 arguments, every dtype),
// exported unverified: the generated header, launchers and torch ops are well-formed; the
// launchers and header compile as C++ against the CUDA headers.
TEST_F(ExportTest, EveryStartingKernelGivesCompilingLaunchers) {
  auto problems = LoadProblemSet(std::string(WS_SOURCE_DIR) + "/problems");
  ASSERT_TRUE(problems.ok()) << problems.status().message();
  {
    auto store = Store::Open((dir_ / "ws" / "warpsmith.db").string());
    ASSERT_TRUE(store.ok());
    for (const auto& p : *problems) {
      if (p.starting_kernel.empty() || IsLibraryBaseline(p.starting_kernel))
        continue;
      auto source = ReadFile(p.dir + "/" + p.starting_kernel);
      ASSERT_TRUE(source.ok()) << p.name;
      auto params = ResolveParams(p, {});
      ASSERT_TRUE(params.ok());
      EvalRequest req;
      req.spec = &p;
      req.source = *source;
      req.params = *params;
      req.compile_only = true;
      EvalResult r;
      r.verdict = Verdict::kNotRun;
      RecordContext ctx;
      ctx.origin = "file:" + p.starting_kernel;
      ASSERT_TRUE(RecordEvaluation(**store, req, r, ctx, 0).ok()) << p.name;
    }
  }
  Proc none =
      Warpsmith({"export", "--all", "--out", (dir_ / "none").string(), "--format", "cmake"});
  EXPECT_EQ(none.exit_code, 2) << "unverified kernels only: nothing to export by default";
  const fs::path out = dir_ / "all";
  Proc x = Warpsmith(
      {"export", "--all", "--include-unverified", "--out", out.string(), "--format", "torch"});
  ASSERT_EQ(x.exit_code, 0) << x.err;
  auto m = json::parse(ReadFile((out / "MANIFEST.json").string()).value());
  EXPECT_GE(m["kernels"].size(), 10u);
  const fs::path csrc = out / "warpsmith_kernels" / "csrc";
  std::vector<std::string> argv = {"/usr/bin/c++",
                                   "-std=c++17",
                                   "-fsyntax-only",
                                   "-I",
                                   (csrc / "include").string(),
                                   "-I",
                                   "/usr/local/cuda/include",
                                   (csrc / "src" / "common.cc").string()};
  for (const auto& k : m["kernels"]) {
    argv.push_back((csrc / "src" / (k["function"].get<std::string>() + ".launch.cc")).string());
  }
  Proc cc = Exec(argv, 600);
  EXPECT_EQ(cc.exit_code, 0) << cc.err.substr(0, 5000);
  Proc py = Exec({"/usr/bin/python3", "-m", "py_compile", (out / "test_ops.py").string()});
  EXPECT_EQ(py.exit_code, 0) << py.err;
}

// A plan with TMA tensor maps and a PDL launch (bf16_gemm's shapes): the generated launcher
// encodes the maps through the runtime's driver entry point and compiles as plain C++.
TEST_F(ExportTest, TensorMapLaunchersCompile) {
  const std::string source = R"CU(/* warpsmith:plan
{ "knobs": { "BM": [128], "BN": [128], "BK": [64] },
  "tensor_maps": {
    "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": ["BK", "BM"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "tma_b": { "tensor": "b", "dims": ["K", "N"], "box": ["BK", "BN"], "swizzle": 128,
               "element_strides": [1, 1], "oob_fill": "nan", "l2_promotion": 64 } },
  "launch": [ { "kernel": "tma_gemm", "grid": ["ceil_div(N, BN)", "ceil_div(M, BM)"],
                "block": [128], "cluster": [1, 2], "smem": "(BM + BN) * BK * 2 + 1024",
                "pdl": true, "args": ["tma_a", "tma_b", "d", "M", "N", "K"] },
              { "kernel": "tma_gemm", "grid": ["ceil_div(N, BN)", "ceil_div(M, BM)"],
                "block": [128], "cluster": [1, 2], "smem": "(BM + BN) * BK * 2 + 1024",
                "pdl": true, "args": ["tma_a", "tma_b", "d", "M", "N", "K"] } ] }
*/
#include <cuda.h>
#include <cuda_bf16.h>
extern "C" __global__ void tma_gemm(const __grid_constant__ CUtensorMap tma_a,
                                    const __grid_constant__ CUtensorMap tma_b,
                                    __nv_bfloat16* d, int M, int N, int K) {}
)CU";
  const std::string text = ExportBf16GemmLauncher(source, "tma");
  EXPECT_NE(text.find("wsd::EncodeTensorMap"), std::string::npos) << text;
  EXPECT_NE(text.find("&map_tma_a, &map_tma_b"), std::string::npos) << text;
  EXPECT_NE(text.find("CU_TENSOR_MAP_SWIZZLE_128B"), std::string::npos) << text;
  // PDL on the second launch only: the first must not overlap the caller's earlier work.
  const size_t pdl = text.find("l.pdl = true");
  EXPECT_NE(pdl, std::string::npos) << text;
  EXPECT_EQ(text.find("l.pdl = true", pdl + 1), std::string::npos) << text;
  EXPECT_LT(text.find("launch[1]"), pdl) << text;
}

// Launches with "when": each is guarded by its condition, PDL only follows a launch that ran,
// and a shape where none runs is an error, not a silent success with unwritten outputs.
TEST_F(ExportTest, ConditionalLaunchersCompile) {
  const std::string source = R"CU(/* warpsmith:plan
{ "knobs": { "SPLIT_M": [128, 0] },
  "launch": [ { "kernel": "small_m", "grid": ["ceil_div(N, 64)"], "block": [128],
                "when": "M <= SPLIT_M", "args": ["a", "b", "d", "M", "N", "K"] },
              { "kernel": "big_m", "grid": ["ceil_div(N, 128)", "ceil_div(M, 128)"],
                "block": [256], "pdl": true, "when": "M > SPLIT_M",
                "args": ["a", "b", "d", "M", "N", "K"] } ] }
*/
#include <cuda_bf16.h>
extern "C" __global__ void small_m(const __nv_bfloat16* a, const __nv_bfloat16* b,
                                   __nv_bfloat16* d, int M, int N, int K) {}
extern "C" __global__ void big_m(const __nv_bfloat16* a, const __nv_bfloat16* b,
                                 __nv_bfloat16* d, int M, int N, int K) {}
)CU";
  const std::string text = ExportBf16GemmLauncher(source, "when");
  EXPECT_NE(text.find("const bool run_0 = "), std::string::npos) << text;
  EXPECT_NE(text.find("const bool run_1 = "), std::string::npos) << text;
  EXPECT_NE(text.find("l.pdl = launched;"), std::string::npos) << text;
  EXPECT_EQ(text.find("l.pdl = true"), std::string::npos) << text;
  EXPECT_NE(text.find("if (!launched)"), std::string::npos) << text;
}

// "pdl" as an expression: the launcher evaluates it per call (and still never on a first launch).
TEST_F(ExportTest, PdlExpressionLaunchersCompile) {
  const std::string source = R"CU(/* warpsmith:plan
{ "knobs": { "PDL": [1, 0] },
  "launch": [ { "kernel": "first", "grid": ["ceil_div(N, 64)"], "block": [128],
                "args": ["a", "b", "d", "M", "N", "K"] },
              { "kernel": "second", "grid": ["ceil_div(N, 128)", "ceil_div(M, 128)"],
                "block": [256], "pdl": "PDL && M < 4096", "args": ["a", "b", "d", "M", "N", "K"] } ] }
*/
#include <cuda_bf16.h>
extern "C" __global__ void first(const __nv_bfloat16* a, const __nv_bfloat16* b,
                                 __nv_bfloat16* d, int M, int N, int K) {}
extern "C" __global__ void second(const __nv_bfloat16* a, const __nv_bfloat16* b,
                                  __nv_bfloat16* d, int M, int N, int K) {}
)CU";
  const std::string text = ExportBf16GemmLauncher(source, "pdlexpr");
  const size_t pdl = text.find("l.pdl = true && (");
  EXPECT_NE(pdl, std::string::npos) << text;
  EXPECT_LT(text.find("launch[1]"), pdl) << text;
  EXPECT_NE(text.find("launch[1] (second).pdl"), std::string::npos) << text;
  EXPECT_EQ(text.find("l.pdl = true;"), std::string::npos) << text;
}

TEST(TimeWithinSpreadTest, UsesTheLargerOfTheSpreads) {
  ShapeTiming rec{"", "bench", 100, 99, 101, 0.5, 200, 0};
  ShapeTiming now = rec;
  double tol = 0;
  now.median_us = 102.9;
  EXPECT_TRUE(TimeWithinSpread(rec, now, &tol));
  EXPECT_DOUBLE_EQ(tol, 4.0);  // max(3 stdev = 1.5, spreads 2 + 2, 3% = 3)
  now.median_us = 104.5;
  EXPECT_FALSE(TimeWithinSpread(rec, now, &tol));
  now.median_us = 95.5;
  EXPECT_FALSE(TimeWithinSpread(rec, now, &tol));
}

}  // namespace
}  // namespace ws
