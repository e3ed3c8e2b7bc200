// The warpsmith binary end to end, without a GPU: listing problems, compile-only evaluation of the
// shipped kernels for both architectures, plan and compile rejections, and the CPU reference
// over .npy files.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "problems/mxfp8_quantize_rowwise/reference.h"
#include "problems/problems.h"
#include "sandbox/sandbox.h"

namespace ws {
namespace {

namespace fs = std::filesystem;

struct CliRun {
  int exit_code;
  std::string out, err;
};

class CliTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) /
           ("ws_cli_" + std::to_string(::getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  CliRun Warpsmith(std::vector<std::string> args) {
    return WarpsmithIn(std::string(WS_SOURCE_DIR) + "/problems", std::move(args));
  }

  // cwd: the working directory (empty: this process's).
  CliRun WarpsmithIn(const std::string& problems_dir, std::vector<std::string> args,
                     const std::string& cwd = "") {
    SandboxSpec spec;
    spec.argv = {std::string(WS_BINARY_DIR) + "/warpsmith", "--workspace",
                 (dir_ / "ws").string(), "--problems-dir", problems_dir};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.working_dir = cwd;
    spec.limits.wall_seconds = 300;
    auto r = RunSandboxed(spec);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return {-1, "", ""};
    EXPECT_FALSE(r->signaled) << r->Describe();
    return {r->exit_code, r->stdout_data, r->stderr_data};
  }

  std::string Write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  fs::path dir_;
};

TEST_F(CliTest, ListsAndShowsProblemsWithoutHiddenShapes) {
  CliRun list = Warpsmith({"problems"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("mxfp8_quantize_rowwise"), std::string::npos);

  CliRun show = Warpsmith({"problems", "show", "mxfp8_quantize_rowwise", "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  auto j = nlohmann::json::parse(show.out);
  EXPECT_EQ(j["name"], "mxfp8_quantize_rowwise");
  EXPECT_FALSE(j["shapes"].contains("hidden"));
  EXPECT_GT(j["shapes"]["hidden_count"].get<int>(), 0);
  EXPECT_EQ(j["shapes"]["bench"].size(), 4u);

  auto spec = LoadProblem(std::string(WS_SOURCE_DIR) + "/problems/mxfp8_quantize_rowwise/spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  for (const auto& h : spec->hidden_shapes) {
    std::string text = "\"M\": " + std::to_string(h.symbols.at("M"));
    EXPECT_EQ(show.out.find(text + ",\n"), std::string::npos) << "hidden shape leaked: " << text;
  }

  CliRun unknown = Warpsmith({"problems", "show", "nope"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no problem named 'nope'"), std::string::npos) << unknown.err;
}

// `problems show` gives bytes and FLOPs per bench shape, and says when no device probe is stored
// for speed-of-light times; `problems lint` exits 1 on a finding and names the problem.
TEST_F(CliTest, ShowWithoutProbeAndLintFindings) {
  CliRun show = Warpsmith({"problems", "show", "mxfp8_quantize_rowwise", "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  auto j = nlohmann::json::parse(show.out);
  EXPECT_TRUE(j["ceilings"].is_null());
  EXPECT_NE(j["ceilings_note"].get<std::string>().find("warpsmith device probe"), std::string::npos);
  ASSERT_EQ(j["bench_cost"].size(), 4u);
  EXPECT_EQ(j["bench_cost"][0]["bytes"].get<int64_t>(), 131072LL * 7168 * 2 + 131072LL * 7168 +
                                                            131072LL * 7168 / 32);
  EXPECT_FALSE(j["bench_cost"][0].contains("sol_us"));
  CliRun text = Warpsmith({"problems", "show", "mxfp8_quantize_rowwise"});
  EXPECT_NE(text.out.find("no speed of light"), std::string::npos) << text.out;

  // A copy of a model problem without hidden shapes.
  const fs::path root = dir_ / "problems";
  fs::create_directories(root);
  fs::copy(fs::path(WS_SOURCE_DIR) / "problems" / "mxfp8_quantize_rowwise",
           root / "mxfp8_quantize_rowwise", fs::copy_options::recursive);
  std::ifstream in(root / "mxfp8_quantize_rowwise" / "spec.json");
  auto spec = nlohmann::json::parse(in);
  spec["shapes"].erase("hidden");
  std::ofstream(root / "mxfp8_quantize_rowwise" / "spec.json") << spec.dump(2);
  SandboxSpec run;
  run.argv = {std::string(WS_BINARY_DIR) + "/warpsmith", "--workspace", (dir_ / "ws").string(),
              "--problems-dir", root.string(), "problems", "lint"};
  auto r = RunSandboxed(run);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 1) << r->stdout_data << r->stderr_data;
  EXPECT_NE(r->stdout_data.find("mxfp8_quantize_rowwise: no hidden shapes"), std::string::npos)
      << r->stdout_data;
  EXPECT_NE(r->stdout_data.find("1 problems linted: 1 findings in 1 problems"), std::string::npos)
      << r->stdout_data;
}

// Every kernel the project ships (GPU references, baselines, starting kernels, the hand-tuned set)
// compiles for both architectures in every parameter setting, and its plan resolves for every
// shape.
TEST_F(CliTest, ShippedKernelsCompileForBothArchitectures) {
  auto problems = LoadProblemSet(std::string(WS_SOURCE_DIR) + "/problems");
  ASSERT_TRUE(problems.ok()) << problems.status().message();
  ASSERT_FALSE(problems->empty());
  for (const auto& p : *problems) {
    std::vector<std::string> files;  // candidates; the reference compiles on its own path
    if (!IsLibraryBaseline(p.baseline)) files.push_back(p.dir + "/" + p.baseline);
    if (p.starting_kernel != p.baseline) files.push_back(p.dir + "/" + p.starting_kernel);
    fs::path tuned = fs::path(WS_SOURCE_DIR) / "kernels" / p.name;
    if (fs::is_directory(tuned)) {
      for (const auto& e : fs::directory_iterator(tuned)) {
        if (e.path().extension() == ".cu") files.push_back(e.path().string());
      }
    }
    // Every combination of parameter values.
    std::vector<std::vector<std::string>> settings = {{}};
    for (const auto& prm : p.params) {
      std::vector<std::vector<std::string>> next;
      for (const auto& base : settings) {
        for (const auto& v : prm.values) {
          auto s = base;
          s.push_back("--set");
          s.push_back(prm.name + "=" + v);
          next.push_back(s);
        }
      }
      settings = next;
    }
    for (const auto& file : files) {
      for (std::string arch : {"sm_90a", "sm_100a"}) {
        for (const auto& sets : settings) {
          std::vector<std::string> args = {"eval", p.name, file, "--arch", arch, "--compile-only"};
          args.insert(args.end(), sets.begin(), sets.end());
          CliRun r = Warpsmith(args);
          EXPECT_EQ(r.exit_code, 0) << file << " " << arch << "\n" << r.out << r.err;
          EXPECT_NE(r.out.find("not_run"), std::string::npos) << r.out;
          EXPECT_NE(r.out.find("registers"), std::string::npos) << r.out;
        }
      }
    }
    // A library baseline compiles nothing, but its empty plan must resolve at every shape.
    if (IsLibraryBaseline(p.baseline)) {
      CliRun r = Warpsmith({"eval", p.name, p.baseline, "--compile-only"});
      EXPECT_EQ(r.exit_code, 0) << p.baseline << "\n" << r.out << r.err;
      EXPECT_NE(r.out.find("plan valid"), std::string::npos) << r.out;
    }
    // The trusted reference, on the evaluator's reference path (with problems/include).
    for (std::string arch : {"sm_90a", "sm_100a"}) {
      for (const auto& sets : settings) {
        std::vector<std::string> args = {"problems", "verify", p.name, "--compile-only", "--arch",
                                         arch};
        args.insert(args.end(), sets.begin(), sets.end());
        CliRun r = Warpsmith(args);
        EXPECT_EQ(r.exit_code, 0) << p.gpu_reference << " " << arch << "\n" << r.out << r.err;
        EXPECT_NE(r.out.find("the GPU reference compiles for " + arch), std::string::npos)
            << r.out;
        EXPECT_NE(r.out.find("registers"), std::string::npos) << r.out;
      }
    }
  }
}

// A dollars budget is refused for an LLM agent without a price, and a price is refused for an
// agent the campaign does not have: either would spend money no budget counts.
TEST_F(CliTest, CampaignPricesAreCheckedBeforeAnythingRuns) {
  CliRun r = Warpsmith({"campaign", "start", "--agent", "anthropic:model-x", "--budget",
                        "dollars=1", "--compile-only"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--price anthropic:model-x=IN,OUT"), std::string::npos) << r.err;
  r = Warpsmith({"campaign", "start", "--agent", "anthropic:model-x", "--price",
                 "anthropic:model-y=3,15", "--budget", "evaluations=1", "--compile-only"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("not an agent of this campaign"), std::string::npos) << r.err;
  r = Warpsmith({"campaign", "start", "--agent", "anthropic:model-x", "--price",
                 "anthropic:model-x=3", "--budget", "evaluations=1", "--compile-only"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("IN,OUT"), std::string::npos) << r.err;
}

// One broken spec in the set stops neither work on another problem nor a campaign that does not
// name it; a campaign that does name it fails with the spec's error.
TEST_F(CliTest, ABrokenSpecElsewhereDoesNotStopWork) {
  const fs::path set = dir_ / "problems";
  fs::create_directories(set);
  fs::copy(fs::path(WS_SOURCE_DIR) / "problems" / "mxfp8_quantize_rowwise",
           set / "mxfp8_quantize_rowwise", fs::copy_options::recursive);
  fs::create_directories(set / "zz_broken");
  std::ofstream(set / "zz_broken" / "spec.json") << "{ \"name\": \"zz_broken\", ";
  const std::string kernel = std::string(WS_SOURCE_DIR) + "/kernels/mxfp8_quantize_rowwise/kernel.cu";

  CliRun r = WarpsmithIn(set.string(), {"eval", "mxfp8_quantize_rowwise", kernel, "--compile-only"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = WarpsmithIn(set.string(), {"campaign", "start", "--problems", "mxfp8_*", "--budget",
                                 "evaluations=2", "--compile-only"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = WarpsmithIn(set.string(), {"campaign", "start", "--problems", "zz_*", "--budget",
                                 "evaluations=2", "--compile-only"});
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("zz_broken/spec.json"), std::string::npos) << r.err;
  // Listing the set reports the broken spec by its path.
  r = WarpsmithIn(set.string(), {"problems"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("zz_broken/spec.json"), std::string::npos) << r.err;
}

// --kernel-library: a candidate compiles against the device library it names (a bundle's, a
// re-verification's), and a header only that library holds is found nowhere else.
TEST_F(CliTest, EvalCompilesAgainstTheNamedKernelLibrary) {
  const fs::path lib = dir_ / "library";
  fs::copy(fs::path(WS_SOURCE_DIR) / "kernels" / "include", lib, fs::copy_options::recursive);
  std::ofstream(lib / "ws" / "only_here.cuh") << "#pragma once\n#define WS_ONLY_HERE 1\n";
  const std::string kernel =
      ReadFile(std::string(WS_SOURCE_DIR) + "/kernels/mxfp8_quantize_rowwise/kernel.cu").value();
  const fs::path file = dir_ / "k.cu";
  std::ofstream(file) << "#include \"ws/only_here.cuh\"\n" << kernel;
  CliRun with = Warpsmith({"eval", "mxfp8_quantize_rowwise", file.string(), "--compile-only",
                           "--kernel-library", lib.string()});
  EXPECT_EQ(with.exit_code, 0) << with.out << with.err;
  CliRun without = Warpsmith({"eval", "mxfp8_quantize_rowwise", file.string(), "--compile-only"});
  EXPECT_NE(without.exit_code, 0) << without.out;
  EXPECT_NE(without.out.find("ws/only_here.cuh"), std::string::npos) << without.out;
  // A relative path names the library from the working directory; a missing one is refused.
  CliRun relative = WarpsmithIn(std::string(WS_SOURCE_DIR) + "/problems",
                                {"eval", "mxfp8_quantize_rowwise", file.string(), "--compile-only",
                                 "--kernel-library", "library"},
                                dir_.string());
  EXPECT_EQ(relative.exit_code, 0) << relative.out << relative.err;
  CliRun missing = Warpsmith({"eval", "mxfp8_quantize_rowwise", file.string(), "--compile-only",
                              "--kernel-library", (dir_ / "no_such_library").string()});
  EXPECT_NE(missing.exit_code, 0) << missing.out;
  EXPECT_NE(missing.err.find("no_such_library"), std::string::npos) << missing.err;
}

// WS_WAIT_TRACE (ws/ptx_sm90.cuh, scripts/trace_kernel.py): the traced waits, with their printf
// and trap, compile in a kernel that waits on barriers in every role.
TEST_F(CliTest, EvalCompilesAKernelWithTracedWaits) {
  const std::string kernel =
      ReadFile(std::string(WS_SOURCE_DIR) + "/kernels/bf16_gemm/kernel.cu").value();
  const fs::path file = dir_ / "traced.cu";
  std::ofstream(file) << "#define WS_WAIT_TRACE 1\n" << kernel;
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    CliRun r = Warpsmith({"eval", "bf16_gemm", file.string(), "--compile-only", "--arch", arch});
    EXPECT_EQ(r.exit_code, 0) << arch << ": " << r.out << r.err;
  }
}

TEST_F(CliTest, RejectsBrokenPlansAndCompileErrors) {
  std::string no_plan = Write("no_plan.cu", "extern \"C\" __global__ void k() {}\n");
  CliRun a = Warpsmith({"eval", "mxfp8_quantize_rowwise", no_plan, "--compile-only"});
  EXPECT_EQ(a.exit_code, 1) << a.out << a.err;
  EXPECT_NE(a.out.find("plan_error"), std::string::npos) << a.out;

  std::string bad_tensor = Write("bad_tensor.cu", R"P(/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M, 4)"], "block": [256], "args": ["x", "y", "N"] } ] }
*/
extern "C" __global__ void k() {}
)P");
  CliRun b = Warpsmith({"eval", "mxfp8_quantize_rowwise", bad_tensor, "--compile-only"});
  EXPECT_EQ(b.exit_code, 1);
  EXPECT_NE(b.out.find("launch[0].args[1]: unknown name 'y'"), std::string::npos) << b.out;

  std::string broken = Write("broken.cu", R"P(/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": [1], "block": [32], "args": [] } ] }
*/
extern "C" __global__ void k() { this_does_not_exist(); }
)P");
  CliRun c = Warpsmith({"eval", "mxfp8_quantize_rowwise", broken, "--compile-only"});
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_NE(c.out.find("compile_error"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("this_does_not_exist"), std::string::npos) << c.out;

  CliRun d = Warpsmith({"eval", "mxfp8_quantize_rowwise", broken, "--set", "rounding=up"});
  EXPECT_EQ(d.exit_code, 2);
  EXPECT_NE(d.err.find("rounding"), std::string::npos) << d.err;

  CliRun e = Warpsmith({"eval", "mxfp8_quantize_rowwise", broken, "--arch", "sm_80"});
  EXPECT_EQ(e.exit_code, 2);
}

TEST_F(CliTest, EveryEvaluationIsRecorded) {
  std::string file = std::string(WS_SOURCE_DIR) + "/kernels/mxfp8_quantize_rowwise/kernel.cu";
  ASSERT_EQ(Warpsmith({"eval", "mxfp8_quantize_rowwise", file, "--compile-only"}).exit_code, 0);
  CliRun again = Warpsmith({"eval", "mxfp8_quantize_rowwise", file, "--compile-only", "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  auto j = nlohmann::json::parse(again.out);
  EXPECT_EQ(j["evaluation_id"], 2);
  EXPECT_TRUE(j["compile"]["cached"].get<bool>()) << "the second compile should hit the cache";
  CliRun lb = Warpsmith({"leaderboard", "--json"});
  ASSERT_EQ(lb.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(lb.out).size(), 0u) << "nothing that did not run may be ranked";
}

// bf16 bit patterns for a few blocks with known answers.
TEST_F(CliTest, ReferenceRunsOnNpyFiles) {
  const int64_t m = 3, k = 64;
  HostTensor x;
  x.dtype = DType::kBF16;
  x.dims = {m, k};
  std::vector<uint16_t> bits(m * k, 0);
  bits[32] = 0x7FC0;                                      // row 0, block 1: NaN
  for (int i = 0; i < 32; ++i) bits[64 + i] = 0x3F80;     // row 1, block 0: all 1.0
  for (int i = 0; i < 32; ++i) bits[96 + i] = 0x8000;     // row 1, block 1: all -0
  for (int i = 0; i < 64; ++i) bits[128 + i] = static_cast<uint16_t>(0x3C00 + i * 37);
  x.bytes.resize(bits.size() * 2);
  std::memcpy(x.bytes.data(), bits.data(), x.bytes.size());
  fs::create_directories(dir_ / "in");
  ASSERT_TRUE(WriteNpy((dir_ / "in" / "x.npy").string(), x).ok());

  for (auto [rounding, mode] : {std::pair{"rceil", mxfp8::Rounding::kRceil},
                                std::pair{"floor", mxfp8::Rounding::kFloor}}) {
    std::string out = (dir_ / (std::string("out_") + rounding)).string();
    CliRun r = Warpsmith({"reference", "mxfp8_quantize_rowwise", "--in", (dir_ / "in").string(),
                       "--out", out, "--set", std::string("rounding=") + rounding});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    auto q = ReadNpy(out + "/q.npy", DType::kFP8E4M3);
    auto s = ReadNpy(out + "/scales.npy", DType::kE8M0);
    ASSERT_TRUE(q.ok() && s.ok());
    EXPECT_EQ(q->dims, (std::vector<int64_t>{m, k}));
    EXPECT_EQ(s->dims, (std::vector<int64_t>{m, k / 32}));
    EXPECT_EQ(s->bytes[0], 0x00) << "an all-zero block has scale 0";
    EXPECT_EQ(q->bytes[0], 0x00);
    EXPECT_EQ(s->bytes[1], 0xFF) << "a block holding NaN has scale 0xFF";
    for (int i = 32; i < 64; ++i) ASSERT_EQ(q->bytes[i], 0x7F);
    // 1.0: rceil picks 2^-8 (1/448 rounds up to 2^-8), floor picks 2^(0-8): both 127 - 8.
    EXPECT_EQ(s->bytes[2], 119);
    EXPECT_EQ(q->bytes[64], 0x78) << "1.0 * 2^8 = 256 is E4M3 0x78";
    EXPECT_EQ(q->bytes[96], 0x80) << "-0 stays 0x80";
    std::vector<uint8_t> want_q(m * k), want_s(m * k / 32);
    mxfp8::QuantizeRowwise(bits.data(), m, k, mode, want_q.data(), want_s.data());
    EXPECT_EQ(q->bytes, want_q);
    EXPECT_EQ(s->bytes, want_s);
  }

  CliRun missing = Warpsmith({"reference", "mxfp8_quantize_rowwise", "--in",
                           (dir_ / "nowhere").string(), "--out", (dir_ / "o").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("x.npy"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace ws
