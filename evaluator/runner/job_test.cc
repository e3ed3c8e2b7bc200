#include "evaluator/runner/job.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "problems/init.h"

namespace ws::runner {
namespace {

// The example of docs/runner-protocol.md.
constexpr const char* kExample = R"({
  "cubin": "/abs/path/kernel.cubin",
  "result": "/abs/path/result.json",
  "cases": [{
    "id": "test-0",
    "launches": [{ "kernel": "quantize_rows", "grid": [1024,1,1], "block": [256,1,1],
                   "cluster": [1,1,1], "smem": 0,
                   "args": [{"tensor": "x"}, {"tensor": "q"}, {"workspace": true},
                            {"i32": 4096}, {"i64": 123456789}] }],
    "workspace": { "bytes": 0, "zero": false },
    "tensors": [
      { "name": "x", "dtype": "bf16", "numel": 4194304, "role": "input",
        "init": { "dist": "mx_blocks", "mean": 0, "stddev": 1, "lo": -1, "hi": 1 } },
      { "name": "q", "dtype": "fp8_e4m3", "numel": 4194304, "role": "output" }
    ],
    "input_seeds": [11, 12, 18446744073709551615],
    "poison": 165,
    "timing": { "warmup": 5, "warmup_ms": 250, "iterations": 100, "l2_flush_bytes": 125829120,
                "audit_iteration": 37, "fresh_seed": "5c1f0e2b9a774d13" },
    "dump": "/abs/path/scratch/test-0",
    "dump_inputs": false
  }]
})";

TEST(JobTest, ParsesTheProtocolExample) {
  auto job = ParseJob(kExample);
  ASSERT_TRUE(job.ok()) << job.status().message();
  EXPECT_EQ(job->cubin, "/abs/path/kernel.cubin");
  ASSERT_EQ(job->cases.size(), 1u);
  const CaseJob& c = job->cases[0];
  EXPECT_EQ(c.id, "test-0");
  ASSERT_EQ(c.tensors.size(), 2u);
  EXPECT_EQ(c.tensors[0].dtype, kWsDtypeBF16);
  EXPECT_EQ(c.tensors[0].dist, kWsDistMxBlocks);
  EXPECT_EQ(c.tensors[0].bytes(), 2 * 4194304);
  EXPECT_EQ(c.tensors[1].dtype, kWsDtypeFP8E4M3);
  EXPECT_EQ(c.tensors[1].tensor_index, 1);
  EXPECT_FALSE(c.tensors[1].input);
  ASSERT_EQ(c.launches.size(), 1u);
  const LaunchJob& l = c.launches[0];
  EXPECT_EQ(l.grid[0], 1024u);
  EXPECT_FALSE(l.clustered());
  ASSERT_EQ(l.args.size(), 5u);
  EXPECT_EQ(l.args[1].kind, ArgJob::Kind::kTensor);
  EXPECT_EQ(l.args[1].tensor, 1);
  EXPECT_EQ(l.args[2].kind, ArgJob::Kind::kWorkspace);
  EXPECT_EQ(l.args[4].value, 123456789);
  ASSERT_EQ(c.input_seeds.size(), 3u);
  EXPECT_EQ(c.input_seeds[2], ~uint64_t{0});
  EXPECT_EQ(c.poison, 165);
  ASSERT_TRUE(c.timing.has_value());
  EXPECT_EQ(c.timing->audit_iteration, 37);
  EXPECT_EQ(c.timing->l2_flush_bytes, 125829120);
  EXPECT_EQ(c.timing->warmup, 5);
  EXPECT_EQ(c.timing->warmup_ms, 250);
  EXPECT_EQ(c.timing->fresh_seed, std::optional<uint64_t>(0x5c1f0e2b9a774d13ull));
}

// Fresh inputs: every warm-up and timed run of a case gets a seed of its own, none the fresh seed
// itself, and another case's fresh seed gives other seeds.
TEST(JobTest, FreshRunSeedsDifferPerRunAndPerCase) {
  std::set<uint64_t> seen;
  for (uint64_t fresh : {uint64_t{0}, uint64_t{0x5c1f0e2b9a774d13ull}}) {
    for (int64_t run = -50; run < 1000; ++run) seen.insert(FreshRunSeed(fresh, run));
    EXPECT_EQ(seen.count(fresh), 0u);
  }
  EXPECT_EQ(seen.size(), 2u * 1050u);
}

TEST(JobTest, RejectsBadJobsNamingTheField) {
  struct Case {
    std::string from, to, error;
  };
  const Case cases[] = {
      {R"("dtype": "bf16")", R"("dtype": "bf17")", "cases[0].tensors[0].dtype: unknown dtype"},
      {R"({"tensor": "q"})", R"({"tensor": "z"})", "cases[0].launches[0].args[1].tensor"},
      {R"({"i32": 4096})", R"({"i32": 4294967296})", "cases[0].launches[0].args[3].i32"},
      {R"("audit_iteration": 37)", R"("audit_iteration": 100)", "timing.audit_iteration"},
      {R"("warmup_ms": 250)", R"("warmup_ms": -1)", "timing.warmup_ms"},
      {R"("warmup_ms": 250)", R"("warmup_ms": 60001)", "timing.warmup_ms"},
      {R"("poison": 165)", R"("poison": 256)", "cases[0].poison"},
      {R"("role": "output")", R"("role": "scratch")", "cases[0].tensors[1].role"},
      {R"("mx_blocks")", R"("cauchy")", "unknown distribution"},
      {R"("name": "q")", R"("name": "x")", "appears twice"},
      {R"("name": "q")", R"("name": "../q")", "cannot name a dump file"},
      {R"([11, 12,)", R"([-11, 12,)", "input_seeds[0]"},
      {R"("grid": [1024,1,1])", R"("grid": [1024,1,1,1])", "launches[0].grid"},
      {R"("cubin")", R"("cubi")", "job.cubin: missing"},
      {R"("iterations": 100)", R"("iterations": 0)", "timing.iterations"},
      {R"("5c1f0e2b9a774d13")", R"("5c1f0e2b9a774d1")", "timing.fresh_seed"},
      {R"("5c1f0e2b9a774d13")", R"("5c1f0e2b9a774d1g")", "timing.fresh_seed"},
  };
  for (const Case& c : cases) {
    std::string text = kExample;
    size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    text.replace(at, c.from.size(), c.to);
    auto job = ParseJob(text);
    ASSERT_FALSE(job.ok()) << c.to;
    EXPECT_NE(job.status().message().find(c.error), std::string::npos)
        << job.status().message();
  }
  EXPECT_FALSE(ParseJob("{").ok());
}

TEST(JobTest, DefaultsAndOptionalFields) {
  auto job = ParseJob(R"({"cubin": "k", "result": "r", "cases": [{"id": "a",
      "launches": [{"kernel": "k", "grid": [2], "block": [32]}],
      "tensors": [{"name": "y", "dtype": "f32", "numel": 0, "role": "output"}]}]})");
  ASSERT_TRUE(job.ok()) << job.status().message();
  const CaseJob& c = job->cases[0];
  EXPECT_EQ(c.input_seeds.size(), 1u);  // one empty set
  EXPECT_FALSE(c.timing.has_value());
  EXPECT_EQ(c.launches[0].grid[1], 1u);
  EXPECT_EQ(c.launches[0].cluster[0], 1u);
  EXPECT_TRUE(c.dump.empty());
  EXPECT_EQ(DtypeCode("e8m0"), kWsDtypeE8M0);
  EXPECT_EQ(DtypeCode("fp64"), -1);
}

// Digested outputs: the job's key as 16 hex digits, each case's outputs by name.
TEST(JobTest, DigestKeyAndDigestedOutputs) {
  const auto job_with = [](const std::string& key, const std::string& digest) {
    return ParseJob(R"({"cubin": "k", "result": "r", )" + key + R"( "cases": [{"id": "a",
        "launches": [{"kernel": "k", "grid": [2], "block": [32]}], "input_seeds": [7],
        "tensors": [{"name": "x", "dtype": "f32", "numel": 8, "role": "input"},
                    {"name": "q", "dtype": "u8", "numel": 8, "role": "output"},
                    {"name": "s", "dtype": "u8", "numel": 1, "role": "output"}],
        "digest": )" + digest + "}]}");
  };
  auto j = job_with(R"("digest_key": "fedcba9876543210",)", R"(["s", "q"])");
  ASSERT_TRUE(j.ok()) << j.status().message();
  ASSERT_TRUE(j->digest_key.has_value());
  EXPECT_EQ(*j->digest_key, 0xFEDCBA9876543210ull);
  EXPECT_EQ(j->cases[0].digest, (std::vector<int>{2, 1}));
  j = job_with("", "null");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_FALSE(j->digest_key.has_value());
  EXPECT_TRUE(j->cases[0].digest.empty());

  struct Bad {
    std::string key, digest, error;
  };
  for (const Bad& b : {
           Bad{"", R"(["q"])", "cases[0].digest: the job has no digest_key"},
           Bad{R"("digest_key": "fedcba987654321",)", "[]", "job.digest_key: expected 16 hex"},
           Bad{R"("digest_key": "fedcba987654321g",)", "[]", "job.digest_key: expected 16 hex"},
           Bad{R"("digest_key": 12345,)", "[]", "job.digest_key: expected a string"},
           Bad{R"("digest_key": "fedcba9876543210",)", R"(["x"])",
               "cases[0].digest[0]: 'x' is not an output"},
           Bad{R"("digest_key": "fedcba9876543210",)", R"(["q", "nope"])",
               "cases[0].digest[1]: 'nope' is not an output"},
           Bad{R"("digest_key": "fedcba9876543210",)", R"(["q", "q"])",
               "cases[0].digest[1]: 'q' appears twice"},
           Bad{R"("digest_key": "fedcba9876543210",)", R"("q")",
               "cases[0].digest: expected an array"},
       }) {
    auto r = job_with(b.key, b.digest);
    ASSERT_FALSE(r.ok()) << b.key << " " << b.digest;
    EXPECT_NE(r.status().message().find(b.error), std::string::npos) << r.status().message();
  }
}

// A case's "sample": which outputs, runs and row sizes; bad ones are named.
TEST(JobTest, SampledOutputs) {
  const auto job_with = [](const std::string& sample) {
    return ParseJob(R"({"cubin": "k", "result": "r", "digest_key": "fedcba9876543210",
        "cases": [{"id": "a",
        "launches": [{"kernel": "k", "grid": [2], "block": [32]}], "input_seeds": [7],
        "tensors": [{"name": "x", "dtype": "f32", "numel": 8, "role": "input"},
                    {"name": "c", "dtype": "f32", "numel": 64, "role": "output"},
                    {"name": "q", "dtype": "u8", "numel": 8, "role": "output"}],
        "digest": ["q"], "sample": )" + sample + "}]}");
  };
  auto j = job_with(R"({"key": "0123456789abcdef", "every": 4, "runs": ["audit", "last"],
                        "outputs": [{"name": "c", "row_bytes": 32}]})");
  ASSERT_TRUE(j.ok()) << j.status().message();
  ASSERT_TRUE(j->cases[0].sample.has_value());
  const SampleJob& s = *j->cases[0].sample;
  EXPECT_EQ(s.key, 0x0123456789ABCDEFull);
  EXPECT_EQ(s.every, 4);
  EXPECT_TRUE(s.Samples("audit") && s.Samples("last") && !s.Samples("check"));
  ASSERT_EQ(s.outputs.size(), 1u);
  EXPECT_EQ(s.outputs[0].tensor, 1);
  EXPECT_EQ(s.outputs[0].row_bytes, 32);
  j = job_with("null");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_FALSE(j->cases[0].sample.has_value());

  const std::string ok_head = R"({"key": "0123456789abcdef", "every": 4, "runs": ["check"], )";
  struct Bad {
    std::string sample, error;
  };
  for (const Bad& b : {
           Bad{"[]", "cases[0].sample: expected an object"},
           Bad{R"({"key": "01", "every": 4, "runs": [], "outputs": []})",
               "cases[0].sample.key: expected 16 hex"},
           Bad{R"({"key": "0123456789abcdef", "every": 1, "runs": [], "outputs": []})",
               "cases[0].sample.every"},
           Bad{R"({"key": "0123456789abcdef", "every": 4, "runs": ["timed"], "outputs": []})",
               "cases[0].sample.runs[0]: expected \"check\""},
           Bad{ok_head + R"("outputs": [{"name": "x", "row_bytes": 4}]})",
               "cases[0].sample.outputs[0].name: 'x' is not an output"},
           Bad{ok_head + R"("outputs": [{"name": "q", "row_bytes": 4}]})",
               "'q' is digested"},
           Bad{ok_head + R"("outputs": [{"name": "c", "row_bytes": 24}]})",
               "row_bytes: 24 does not divide the output's 256 bytes"},
           Bad{ok_head + R"("outputs": [{"name": "c", "row_bytes": 512}]})",
               "cases[0].sample.outputs[0].row_bytes"},
           Bad{ok_head + R"("outputs": [{"name": "c", "row_bytes": 32},
                                        {"name": "c", "row_bytes": 64}]})",
               "cases[0].sample.outputs[1].name: 'c' appears twice"},
           Bad{ok_head + R"("outputs": "c"})", "cases[0].sample.outputs: expected an array"},
       }) {
    auto r = job_with(b.sample);
    ASSERT_FALSE(r.ok()) << b.sample;
    EXPECT_NE(r.status().message().find(b.error), std::string::npos) << r.status().message();
  }
}

// The rows a sample keeps: ascending, about one in `every`, the same for the same key in every
// process (the runner draws them, the checker again), other rows under another key.
TEST(JobTest, SampledRowsAreKeyedAndAboutOneInEvery) {
  const auto a = SampledRows(42, 100000, 16);
  EXPECT_EQ(a, SampledRows(42, 100000, 16));
  EXPECT_GT(a.size(), 100000u / 16 * 9 / 10);
  EXPECT_LT(a.size(), 100000u / 16 * 11 / 10);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::set<int64_t>(a.begin(), a.end()).size(), a.size());
  EXPECT_GE(a.front(), 0);
  EXPECT_LT(a.back(), 100000);
  const auto b = SampledRows(43, 100000, 16);
  std::vector<int64_t> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  EXPECT_LT(both.size(), a.size() / 4) << "another key draws other rows";
  // No stride: the gaps between kept rows vary (a cheat cannot skip rows in a fixed pattern).
  std::set<int64_t> gaps;
  for (size_t i = 1; i < a.size(); ++i) gaps.insert(a[i] - a[i - 1]);
  EXPECT_GT(gaps.size(), 20u);
  // Never empty when there are rows; nothing of nothing.
  for (uint64_t key = 0; key < 64; ++key) {
    const auto one = SampledRows(key, 3, 1 << 20);
    ASSERT_EQ(one.size(), 1u);
    EXPECT_LT(one[0], 3);
  }
  EXPECT_TRUE(SampledRows(1, 0, 16).empty());
}

// The MoE distributions' fields reach the generation kernel's parameters; bad ones are named.
TEST(JobTest, RoutingAndOutlierDistributions) {
  const auto job_with = [](const std::string& tensor) {
    return ParseJob(R"({"cubin": "k", "result": "r", "cases": [{"id": "a",
        "launches": [{"kernel": "k", "grid": [2], "block": [32]}],
        "input_seeds": [7], "tensors": [)" + tensor + R"(]}]})");
  };
  auto j = job_with(R"({"name": "ids", "dtype": "i32", "numel": 64, "role": "input",
      "init": {"dist": "topk_ids", "experts": 256, "k": 8, "skew": 1.5}})");
  ASSERT_TRUE(j.ok()) << j.status().message();
  WsInitParams p = j->cases[0].tensors[0].init();
  EXPECT_EQ(p.dist, kWsDistTopkIds);
  EXPECT_EQ(p.n0, 256);
  EXPECT_EQ(p.n1, 8);
  EXPECT_FLOAT_EQ(p.p0, 1.5f);

  j = job_with(R"({"name": "offs", "dtype": "i32", "numel": 32, "role": "input",
      "init": {"dist": "group_offsets", "total": 4096, "align": 128, "skew": 1, "empty": 0.1}})");
  ASSERT_TRUE(j.ok()) << j.status().message();
  p = j->cases[0].tensors[0].init();
  EXPECT_EQ(p.dist, kWsDistGroupOffsets);
  EXPECT_EQ(p.n0, 4096);
  EXPECT_EQ(p.n1, 128);
  EXPECT_EQ(p.n2, 32);  // G: the element count
  EXPECT_FLOAT_EQ(p.p1, 0.1f);

  j = job_with(R"({"name": "x", "dtype": "bf16", "numel": 32, "role": "input",
      "init": {"dist": "normal_outliers", "stddev": 2, "outlier_fraction": 0.01,
               "outlier_scale": 100}})");
  ASSERT_TRUE(j.ok()) << j.status().message();
  p = j->cases[0].tensors[0].init();
  EXPECT_EQ(p.dist, kWsDistNormalOutliers);
  EXPECT_FLOAT_EQ(p.p1, 2);
  EXPECT_FLOAT_EQ(p.p2, 0.01f);
  EXPECT_FLOAT_EQ(p.p3, 100);

  struct Bad {
    std::string tensor, error;
  };
  for (const Bad& b : {
           Bad{R"({"name": "ids", "dtype": "i32", "numel": 60, "role": "input",
               "init": {"dist": "topk_ids", "experts": 256, "k": 8}})",
               "init.k: 60 elements are not rows of 8"},
           Bad{R"({"name": "ids", "dtype": "i32", "numel": 64, "role": "input",
               "init": {"dist": "topk_ids", "experts": 4, "k": 8}})",
               "init.k: 8 is out of range [0, 4]"},
           Bad{R"({"name": "ids", "dtype": "bf16", "numel": 64, "role": "input",
               "init": {"dist": "topk_ids", "experts": 256, "k": 8}})",
               "'topk_ids' needs an integer tensor"},
           Bad{R"({"name": "offs", "dtype": "i32", "numel": 8, "role": "input",
               "init": {"dist": "group_offsets", "total": 100, "align": 16}})",
               "init.total: 100 is not a multiple of align 16"},
           Bad{R"({"name": "offs", "dtype": "i32", "numel": 8, "role": "input",
               "init": {"dist": "group_offsets", "align": 16}})",
               "init.total: missing"},
       }) {
    auto bad = job_with(b.tensor);
    ASSERT_FALSE(bad.ok()) << b.tensor;
    EXPECT_NE(bad.status().message().find(b.error), std::string::npos) << bad.status().message();
  }
}

// A case's allowance for the watchdog: optional (old jobs have none), else positive and finite.
TEST(JobTest, CaseBudget) {
  const auto job_with = [](const std::string& budget) {
    return ParseJob(R"({"cubin": "k", "result": "r", "cases": [{"id": "a",
        "launches": [{"kernel": "k", "grid": [2], "block": [32]}],
        "tensors": [{"name": "y", "dtype": "f32", "numel": 0, "role": "output"}])" +
                    budget + "}]}");
  };
  auto j = job_with("");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_FALSE(j->cases[0].budget_s.has_value());
  j = job_with(R"(, "budget_s": null)");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_FALSE(j->cases[0].budget_s.has_value());
  for (const auto& [text, want] : {std::pair<std::string, double>{"5", 5},
                                   {"0.25", 0.25},
                                   {"37.5", 37.5},
                                   {"86400", 86400}}) {
    j = job_with(R"(, "budget_s": )" + text);
    ASSERT_TRUE(j.ok()) << text << ": " << j.status().message();
    ASSERT_TRUE(j->cases[0].budget_s.has_value()) << text;
    EXPECT_DOUBLE_EQ(*j->cases[0].budget_s, want);
  }
  // JSON has no infinity or NaN; the parser refuses 1e999 outright.
  EXPECT_FALSE(job_with(R"(, "budget_s": 1e999)").ok());
  for (const char* bad : {"0", "-1", "0.0", "-0.5", "86401", R"("5")", "true", "[5]", "{}"}) {
    j = job_with(std::string(R"(, "budget_s": )") + bad);
    ASSERT_FALSE(j.ok()) << bad;
    EXPECT_NE(j.status().message().find("cases[0].budget_s: expected seconds"), std::string::npos)
        << bad << ": " << j.status().message();
  }
}

// A one-case job with `fields` added at its top level.
Result<Job> JobWithTopLevel(const std::string& fields) {
  return ParseJob(R"({"cubin": "k", "result": "r")" + fields + R"(, "cases": [{"id": "a",
      "launches": [{"kernel": "k", "grid": [2], "block": [32]}],
      "tensors": [{"name": "y", "dtype": "f32", "numel": 0, "role": "output"}]}]})");
}

TEST(JobTest, GpuLock) {
  const auto job_with = JobWithTopLevel;
  auto j = job_with("");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_TRUE(j->gpu_lock.empty());
  j = job_with(R"(, "gpu_lock": "/tmp/l/gpu-0.lock", "gpu_lock_wait_s": 600)");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ(j->gpu_lock, "/tmp/l/gpu-0.lock");
  EXPECT_DOUBLE_EQ(j->gpu_lock_wait_s, 600);
  for (const char* bad : {R"(, "gpu_lock": "/l")", R"(, "gpu_lock": "/l", "gpu_lock_wait_s": -1)",
                          R"(, "gpu_lock": "/l", "gpu_lock_wait_s": "5")",
                          R"(, "gpu_lock": "/l", "gpu_lock_wait_s": 86401)"}) {
    j = job_with(bad);
    ASSERT_FALSE(j.ok()) << bad;
    EXPECT_NE(j.status().message().find("job.gpu_lock_wait_s"), std::string::npos)
        << bad << ": " << j.status().message();
  }
  EXPECT_FALSE(job_with(R"(, "gpu_lock": 5, "gpu_lock_wait_s": 1)").ok());
}

TEST(JobTest, TurnGate) {
  const auto job_with = JobWithTopLevel;
  auto j = job_with("");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_TRUE(j->turn.empty());
  j = job_with(R"(, "turn": "/s/turn", "turn_wait_s": 120.5, "gpu_lock": "/l", "gpu_lock_wait_s": 9)");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ(j->turn, "/s/turn");
  EXPECT_DOUBLE_EQ(j->turn_wait_s, 120.5);
  EXPECT_DOUBLE_EQ(j->gpu_lock_wait_s, 9);
  for (const char* bad : {R"(, "turn": "/t")", R"(, "turn": "/t", "turn_wait_s": -1)",
                          R"(, "turn": "/t", "turn_wait_s": null)",
                          R"(, "turn": "/t", "turn_wait_s": 1e9)"}) {
    j = job_with(bad);
    ASSERT_FALSE(j.ok()) << bad;
    EXPECT_NE(j.status().message().find("job.turn_wait_s"), std::string::npos)
        << bad << ": " << j.status().message();
  }
  EXPECT_FALSE(job_with(R"(, "turn": ["/t"], "turn_wait_s": 1)").ok());
}

TEST(JobTest, Stats) {
  TimingStats s = ComputeStats({5, 1, 3, 2, 4, 6, 7, 8, 9, 10});
  EXPECT_DOUBLE_EQ(s.min_us, 1);
  EXPECT_DOUBLE_EQ(s.median_us, 5.5);
  EXPECT_DOUBLE_EQ(s.p90_us, 9);
  EXPECT_DOUBLE_EQ(s.mean_us, 5.5);
  EXPECT_NEAR(s.stdev_us, 3.0276503540974917, 1e-12);
  TimingStats one = ComputeStats({4});
  EXPECT_DOUBLE_EQ(one.median_us, 4);
  EXPECT_DOUBLE_EQ(one.p90_us, 4);
  EXPECT_DOUBLE_EQ(one.stdev_us, 0);
  EXPECT_DOUBLE_EQ(ComputeStats({}).median_us, 0);
}

}  // namespace
}  // namespace ws::runner
