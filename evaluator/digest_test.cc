// Bench outputs as keyed digests, without a GPU: which outputs are digested, how a candidate's
// digests meet the reference's, that the byte checker skips them, and where scratch goes.
#include <sys/statfs.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "evaluator/internal.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Digests = std::map<std::string, std::string>;

Tolerance Kind(ToleranceKind k) {
  Tolerance t;
  t.kind = k;
  return t;
}

ProblemSpec Spec() {
  ProblemSpec s;
  s.name = "digests";
  s.symbols = {"N"};
  s.tensors = {{"x", DType::kF32, {"N"}, TensorRole::kInput, {}},
               {"q", DType::kU8, {"N"}, TensorRole::kOutput, {}},
               {"s", DType::kU8, {"N"}, TensorRole::kOutput, {}},
               {"y", DType::kF32, {"N"}, TensorRole::kOutput, {}}};
  s.tolerance = {{"q", Kind(ToleranceKind::kExact)},
                 {"s", Kind(ToleranceKind::kExact)},
                 {"y", Kind(ToleranceKind::kUlp)}};
  return s;
}

TEST(DigestedOutputsTest, ExactOutputsOfBenchShapesOnly) {
  ProblemSpec spec = Spec();
  EXPECT_EQ(DigestedOutputs(spec, "bench"), (std::vector<std::string>{"q", "s"}));
  // Test and hidden shapes keep their bytes, so a failure names coordinates.
  EXPECT_TRUE(DigestedOutputs(spec, "test").empty());
  EXPECT_TRUE(DigestedOutputs(spec, "hidden").empty());

  // An exact output an mx_data check reads as its partner keeps its bytes.
  Tolerance mx = Kind(ToleranceKind::kMxData);
  mx.partner = "s";
  spec.tolerance["y"] = mx;
  EXPECT_EQ(DigestedOutputs(spec, "bench"), (std::vector<std::string>{"q"}));

  // A custom checker reads every output: nothing is digested.
  Tolerance custom = Kind(ToleranceKind::kCustom);
  custom.checker = "router_topk";
  spec.tolerance["y"] = custom;
  EXPECT_TRUE(DigestedOutputs(spec, "bench").empty());
}

// Sampled in the audited and last runs: large bench outputs under ulp, close or gemm tolerances.
TEST(SampledOutputRowsTest, LargeNonExactBenchOutputsOnly) {
  ProblemSpec spec;
  spec.name = "sampled";
  spec.symbols = {"M", "N"};
  spec.tensors = {{"a", DType::kBF16, {"M", "N"}, TensorRole::kInput, {}},
                  {"c", DType::kBF16, {"M", "N"}, TensorRole::kOutput, {}},
                  {"y", DType::kF32, {"M", "N"}, TensorRole::kOutput, {}},
                  {"q", DType::kU8, {"M", "N"}, TensorRole::kOutput, {}},
                  {"v", DType::kF32, {"M"}, TensorRole::kOutput, {}}};
  spec.tolerance = {{"c", Kind(ToleranceKind::kGemm)},
                    {"y", Kind(ToleranceKind::kClose)},
                    {"q", Kind(ToleranceKind::kExact)},
                    {"v", Kind(ToleranceKind::kUlp)}};
  const SymbolTable big = {{"M", 16384}, {"N", 4096}};
  auto r = SampledOutputRows(spec, big, "bench", DigestedOutputs(spec, "bench"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  // q is digested, v has one dimension: neither is sampled.
  EXPECT_EQ(*r, (std::map<std::string, int64_t>{{"c", 8192}, {"y", 16384}}));
  r = SampledOutputRows(spec, big, "bench", {"y"});
  EXPECT_EQ(*r, (std::map<std::string, int64_t>{{"c", 8192}}));
  EXPECT_TRUE(SampledOutputRows(spec, big, "test", {})->empty());
  EXPECT_TRUE(SampledOutputRows(spec, big, "hidden", {})->empty());
  // Under 64 MiB, or fewer than 2048 rows: whole.
  EXPECT_EQ(*SampledOutputRows(spec, {{"M", 4096}, {"N", 4096}}, "bench", {"q"}),
            (std::map<std::string, int64_t>{{"y", 16384}}));
  EXPECT_TRUE(SampledOutputRows(spec, {{"M", 1024}, {"N", 1 << 16}}, "bench", {"q"})->empty());
}

TEST(CompareDigestsTest, EqualDifferentMissingMalformed) {
  const std::string a(32, 'a'), b = std::string(31, 'a') + "b";
  const std::vector<std::string> outputs = {"q", "s"};
  auto r = CompareDigests(outputs, {{"q", a}, {"s", b}}, {{"q", a}, {"s", b}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "");

  r = CompareDigests(outputs, {{"q", a}, {"s", a}}, {{"q", a}, {"s", b}});
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->find("output 's' differs"), std::string::npos) << *r;
  EXPECT_NE(r->find("digest"), std::string::npos) << *r;

  // The first output that differs, in the spec's order.
  r = CompareDigests(outputs, {{"q", b}, {"s", a}}, {{"q", a}, {"s", b}});
  EXPECT_NE(r->find("output 'q'"), std::string::npos) << *r;

  // A candidate that reports no digest (or garbage) fails; the reference's own lack is an error.
  for (const Digests& got : {Digests{{"q", a}}, Digests{{"q", a}, {"s", "zz"}},
                             Digests{{"q", a}, {"s", std::string(32, 'A')}}}) {
    r = CompareDigests(outputs, got, {{"q", a}, {"s", b}});
    ASSERT_TRUE(r.ok());
    EXPECT_NE(r->find("output 's' was not written back"), std::string::npos) << *r;
  }
  EXPECT_FALSE(CompareDigests(outputs, {{"q", a}, {"s", b}}, {{"q", a}}).ok());
  EXPECT_EQ(*CompareDigests({}, {}, {}), "");
}

TEST(RunDigestsTest, ReadsOneRunOfACaseResult) {
  const json c = json::parse(R"({"id": "bench-3", "status": "ok",
      "digests": {"check": {"q": "0123", "s": 5}, "audit": {"q": "abcd"}}})");
  EXPECT_EQ(RunDigests(c, "check"), (Digests{{"q", "0123"}}));  // non-strings dropped
  EXPECT_EQ(RunDigests(c, "audit"), (Digests{{"q", "abcd"}}));
  EXPECT_TRUE(RunDigests(c, "last").empty());
  EXPECT_TRUE(RunDigests(json::parse(R"({"digests": []})"), "check").empty());
  EXPECT_TRUE(RunDigests(json(), "check").empty());
}

TEST(CheckOutputsTest, DigestedOutputsAreLeftToTheDigests) {
  ProblemSpec spec = Spec();
  auto bytes = [](std::vector<uint8_t> b) { return HostTensor{DType::kU8, {2}, std::move(b)}; };
  const TensorMap want = {{"q", bytes({1, 2})}, {"y", HostTensor{DType::kF32, {0}, {}}}};
  const TensorMap got = {{"q", bytes({1, 3})}, {"y", HostTensor{DType::kF32, {0}, {}}}};
  const auto no_inputs = []() -> Result<TensorMap> { return Status::Error("not needed"); };
  // Without `digested`, s is missing and q differs; with it, only y is compared here.
  auto r = CheckOutputs(spec, {{"N", 2}}, {}, got, want, no_inputs);
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->find("q[1]"), std::string::npos) << *r;
  r = CheckOutputs(spec, {{"N", 2}}, {}, got, want, no_inputs, {"q", "s"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "");
  r = CheckOutputs(spec, {{"N", 2}}, {}, got, want, no_inputs, {"s"});
  EXPECT_NE(r->find("q[1]"), std::string::npos) << *r;
}

TEST(ChooseScratchRootTest, TmpfsWithRoomElseTheFallback) {
  const std::string fallback = "/work/fallback";
  EXPECT_EQ(ChooseScratchRoot({"/nonexistent-tmpfs"}, 0, fallback), fallback);
  EXPECT_EQ(ChooseScratchRoot({"/dev/shm"}, -1, fallback), fallback);  // unknown need
  EXPECT_EQ(ChooseScratchRoot({"/dev/shm"}, int64_t{1} << 50, fallback), fallback);
  // Not a tmpfs: a folder of the test's own (TempDir is on disk here unless /tmp is a tmpfs).
  struct statfs st;
  const std::string tmp = testing::TempDir();
  if (::statfs(tmp.c_str(), &st) == 0 && st.f_type != 0x01021994) {
    EXPECT_EQ(ChooseScratchRoot({tmp}, 0, fallback), fallback);
  }
  if (::statfs("/dev/shm", &st) != 0 || st.f_type != 0x01021994) {
    GTEST_SKIP() << "no tmpfs at /dev/shm here";
  }
  EXPECT_EQ(ChooseScratchRoot({"/nonexistent-tmpfs", "/dev/shm"}, 1 << 20, fallback), "/dev/shm");
}

// A named root takes every evaluation's folder, each fresh and private to this user.
TEST(MakeScratchTest, UnderTheNamedRootFreshAndPrivate) {
  namespace fs = std::filesystem;
  EvaluatorOptions opts;
  opts.workspace = testing::TempDir() + "/ws_scratch_ws_" + std::to_string(::getpid());
  opts.scratch_root = testing::TempDir() + "/ws_scratch_root_" + std::to_string(::getpid());
  auto a = MakeScratch(opts, 0);
  auto b = MakeScratch(opts, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  for (const std::string& dir : {*a, *b}) {
    EXPECT_EQ(fs::path(dir).parent_path(), fs::path(opts.scratch_root)) << dir;
    EXPECT_TRUE(fs::is_directory(dir));
    EXPECT_EQ(fs::status(dir).permissions() & fs::perms::all, fs::perms::owner_all) << dir;
  }
  EXPECT_FALSE(fs::exists(opts.workspace + "/scratch"));
  fs::remove_all(opts.scratch_root);
  // Without one: the per-user tmpfs folder or the workspace's, never the named root.
  opts.scratch_root.clear();
  auto c = MakeScratch(opts, 0);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(fs::exists(testing::TempDir() + "/ws_scratch_root_" + std::to_string(::getpid())));
  fs::remove_all(*c);
  fs::remove_all(opts.workspace);
}

}  // namespace
}  // namespace ws
