// The hand-tuned kernels' plans pick launches by shape ("when"). A path that runs at a bench or
// hidden shape but at no test shape would be timed and shipped without its cheap, early check, so
// every launch that some bench or hidden shape runs must also run at some test shape, for every
// parameter setting at the default knobs. Also holds the MXFP8 fwd / dgrad plans to the paths
// their headers describe at the bench shapes.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "base/files.h"
#include "evaluator/evaluator.h"

namespace ws {
namespace {

const std::string kRoot = WS_SOURCE_DIR;

// The plan of a kernel file (a test failure, and an empty plan, when it does not read or parse).
Plan PlanOf(const std::string& path) {
  auto source = ReadFile(path);
  EXPECT_TRUE(source.ok()) << path << ": " << source.status().message();
  auto plan = ParsePlan(source.ok() ? *source : "");
  EXPECT_TRUE(plan.ok()) << path << ": " << plan.status().message();
  return plan.ok() ? *plan : Plan{};
}

// Every combination of the spec's parameter values.
std::vector<std::map<std::string, std::string>> Settings(const ProblemSpec& spec) {
  std::vector<std::map<std::string, std::string>> out = {{}};
  for (const ParamSpec& p : spec.params) {
    std::vector<std::map<std::string, std::string>> next;
    for (const auto& s : out) {
      for (const std::string& v : p.values) {
        auto t = s;
        t[p.name] = v;
        next.push_back(t);
      }
    }
    out = next;
  }
  return out;
}

// The kernels the plan launches at one shape, in launch order.
std::vector<std::string> Launched(const Plan& plan, const ProblemSpec& spec, const Shape& shape,
                                  const std::map<std::string, std::string>& params) {
  auto rp = ResolvePlan(plan, spec, BindSymbols(spec, shape, params), {}, DeviceLimits{});
  EXPECT_TRUE(rp.ok()) << spec.name << " " << ShapeText(spec, shape) << ": "
                       << rp.status().message();
  std::vector<std::string> names;
  if (rp.ok()) {
    for (const ResolvedLaunch& l : rp->launches) names.push_back(l.kernel);
  }
  return names;
}

TEST(KernelPathsTest, EveryTimedPathRunsAtATestShape) {
  int kernels = 0;
  for (const auto& dir : std::filesystem::directory_iterator(kRoot + "/kernels")) {
    const std::string name = dir.path().filename();
    const std::string kernel = dir.path().string() + "/kernel.cu";
    const std::string spec_path = kRoot + "/problems/" + name + "/spec.json";
    if (!std::filesystem::exists(kernel) || !std::filesystem::exists(spec_path))
      continue;
    auto spec = LoadProblem(spec_path);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    const Plan plan = PlanOf(kernel);
    ASSERT_FALSE(plan.launches.empty()) << kernel;
    ++kernels;
    for (const auto& params : Settings(*spec)) {
      std::set<std::string> tested;
      for (const Shape& s : spec->test_shapes) {
        for (const std::string& k : Launched(plan, *spec, s, params)) tested.insert(k);
      }
      for (const auto* shapes : {&spec->bench_shapes, &spec->hidden_shapes}) {
        for (const Shape& s : *shapes) {
          for (const std::string& k : Launched(plan, *spec, s, params)) {
            EXPECT_TRUE(tested.count(k)) << name << " at " << ShapeText(*spec, s) << " launches "
                                         << k << ", which no test shape runs";
          }
        }
      }
    }
  }
  EXPECT_GT(kernels, 20);
}

// The MXFP8 fwd / dgrad plans (their kernel.cu headers): B converted first where M >= E * (output
// columns), the tokens on the transposed problem where fewer, the BN=64 transposed pair below
// 128 tokens per group; exactly one GEMM per shape.
TEST(KernelPathsTest, Mxfp8PlansConvertTheSmallerOperand) {
  for (const std::string form : {"fwd", "dgrad"}) {
    const std::string name = "mxfp8_grouped_gemm_" + form;
    auto spec = LoadProblem(kRoot + "/problems/" + name + "/spec.json");
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    const Plan plan = PlanOf(kRoot + "/kernels/" + name + "/kernel.cu");
    ASSERT_FALSE(plan.launches.empty()) << name;
    const std::string sm90 = "sm90_" + name, both = "sm90_sm100_" + name;
    const std::string cols = form == "fwd" ? "N" : "K";
    int paths[3] = {0, 0, 0};
    for (const Shape& s : spec->bench_shapes) {
      const int64_t m = s.symbols.at("M"), e = s.symbols.at("E"), c = s.symbols.at(cols);
      std::vector<std::string> want;
      if (m < 128 * e) {
        want = {sm90 + "_short_pre", both + "_short"};
        ++paths[2];
      } else if (m < e * c) {
        want = {sm90 + "_t_pre", both + "_t"};
        ++paths[1];
      } else {
        want = {sm90 + "_pre_b", both};
        ++paths[0];
      }
      EXPECT_EQ(Launched(plan, *spec, s, {}), want) << name << " " << ShapeText(*spec, s);
    }
    // The bench set reaches all three paths (8-expert, 128-expert and decode shapes).
    EXPECT_GT(paths[0], 0) << name;
    EXPECT_GT(paths[1], 0) << name;
    EXPECT_GT(paths[2], 0) << name;
  }
}

// bf16_grouped_gemm (its kernel.cu header): wgrad at up to EPI_SHORT = 1024 tokens per group runs
// the staged-epilogue instance, fwd at up to SHORT = 64 the short-group instance (SHORT_BN-wide
// tiles), every other shape and form the EPI instance; one GEMM per shape.
TEST(KernelPathsTest, GroupedGemmInstancesByGroupLength) {
  const std::string name = "bf16_grouped_gemm";
  auto spec = LoadProblem(kRoot + "/problems/" + name + "/spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const Plan plan = PlanOf(kRoot + "/kernels/" + name + "/kernel.cu");
  const std::string main = "sm90_sm100_" + name + "_tma", staged = main + "_staged",
                    short_fwd = main + "_short";
  std::map<std::string, int> paths;
  for (const std::string form : {"fwd", "dgrad", "wgrad"}) {
    for (const Shape& s : spec->bench_shapes) {
      const int64_t m = s.symbols.at("M"), e = s.symbols.at("E");
      const std::string want = form == "wgrad" && m <= 1024 * e ? staged
                               : form == "fwd" && m <= 64 * e   ? short_fwd
                                                                : main;
      ++paths[want];
      EXPECT_EQ(Launched(plan, *spec, s, {{"form", form}}), std::vector<std::string>{want})
          << form << " " << ShapeText(*spec, s);
    }
  }
  // All three instances are timed: the 8-16 expert shapes, the 128-expert / decode wgrad ones and
  // the decode fwd one.
  EXPECT_GT(paths[main], 0);
  EXPECT_GT(paths[staged], 0);
  EXPECT_GT(paths[short_fwd], 0);
}

// moe_permute_quantize (its kernel.cu header): up to ROUTE_K = 2 choices per token the routing is
// one launch of a cluster of 8 CTAs (no workspace), above it three launches (the cluster's ranking
// lost at K = 8); RANGE_K = 8 routes K = 8 in two (the cluster's scan, 256 ranking CTAs). The
// quantize after the routing is a pdl launch: with EARLY (the default) the _early kernel,
// EARLY_TOKENS warps per CTA, wherever their slots fit a CTA (its tokens per warp:
// PermuteEarlyTokensPerWarp); else (EARLY=0, or a row too long) the row-by-row kernel from
// WIDE_K = 4, the tile kernel below.
TEST(KernelPathsTest, PermuteRoutesByTopK) {
  const std::string name = "moe_permute_quantize";
  auto spec = LoadProblem(kRoot + "/problems/" + name + "/spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const Plan plan = PlanOf(kRoot + "/kernels/" + name + "/kernel.cu");
  const std::string quantize = "sm90_bf16_moe_permute_mxfp8_quantize", wide = quantize + "_wide";
  const std::string early = quantize + "_early";
  std::vector<Shape> shapes = spec->bench_shapes;
  Shape long_rows = shapes.front();  // 4 slots of 64 KB rows: past a CTA's 227 KB
  long_rows.symbols["H"] = 65536;
  shapes.push_back(long_rows);
  int one_launch = 0, three = 0, early_runs = 0;
  for (const Shape& s : shapes) {
    const int64_t k = s.symbols.at("K"), e = s.symbols.at("E"), h = s.symbols.at("H");
    for (const int64_t early_knob : {1, 0}) {
      for (const int64_t range_k : {0, 8}) {
        auto rp = ResolvePlan(plan, *spec, BindSymbols(*spec, s, {{"rounding", "rceil"}}),
                              {{"RANGE_K", range_k}, {"EARLY", early_knob}}, DeviceLimits{});
        ASSERT_TRUE(rp.ok()) << ShapeText(*spec, s) << ": " << rp.status().message();
        std::vector<std::string> names;
        for (const ResolvedLaunch& l : rp->launches) names.push_back(l.kernel);
        const bool fits = 4 * (h + (h / 32 + 15) / 16 * 16) <= 232448;
        const std::string q = early_knob && fits ? early : k >= 4 ? wide : quantize;
        if (q == early) {
          ++early_runs;
          EXPECT_EQ(rp->launches.back().block[0], 128);
        }
        if (k <= 2) {
          ++one_launch;
          EXPECT_EQ(names, (std::vector<std::string>{"moe_permute_route", q}))
              << ShapeText(*spec, s);
          EXPECT_EQ(rp->launches[0].cluster[0], 8);
          EXPECT_EQ(rp->launches[0].grid[0], 8);
          EXPECT_EQ(rp->workspace_bytes, 0);
        } else if (range_k >= k) {
          EXPECT_EQ(names, (std::vector<std::string>{"moe_permute_route_starts",
                                                     "moe_permute_rank_ranges", q}))
              << ShapeText(*spec, s);
          EXPECT_EQ(rp->workspace_bytes, 256 * e * 4);
        } else {
          ++three;
          EXPECT_EQ(names, (std::vector<std::string>{"moe_permute_chunk_counts",
                                                     "moe_permute_scan", "moe_permute_rank", q}))
              << ShapeText(*spec, s);
          EXPECT_GT(rp->workspace_bytes, 0);
        }
        ASSERT_FALSE(rp->launches.empty());
        EXPECT_FALSE(rp->launches.front().pdl);
        EXPECT_TRUE(rp->launches.back().pdl);
      }
    }
  }
  EXPECT_GT(one_launch, 0);
  EXPECT_GT(three, 0);
  EXPECT_EQ(early_runs, 2 * static_cast<int>(spec->bench_shapes.size()));  // not the long rows
}

// EARLY_SMEM (default 24576 bytes) gives each _early warp max(1, EARLY_SMEM / (EARLY_TOKENS *
// pitch)) tokens, at most EARLY_TPW where that is set: the kernel's last argument, the grid and
// the slots all follow it (at H2048, 2 tokens per warp; at the longer bench rows one, as with
// EARLY_SMEM=0; EARLY_SMEM=33792 EARLY_TPW=2 gives H4096 two and holds H2048 at two).
TEST(KernelPathsTest, PermuteEarlyTokensPerWarp) {
  const std::string name = "moe_permute_quantize";
  auto spec = LoadProblem(kRoot + "/problems/" + name + "/spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const Plan plan = PlanOf(kRoot + "/kernels/" + name + "/kernel.cu");
  int multi = 0;
  for (const Shape& s : spec->bench_shapes) {
    const int64_t t = s.symbols.at("T"), h = s.symbols.at("H");
    const int64_t pitch = h + (h / 32 + 15) / 16 * 16;
    // (EARLY_SMEM, EARLY_TPW), the default first, as the plan declares it.
    const std::vector<std::pair<int64_t, int64_t>> settings = {
        {24576, 0}, {0, 0}, {32768, 0}, {33792, 2}};
    for (const auto& [budget, cap] : settings) {
      std::map<std::string, int64_t> knobs;
      if (budget != 24576) knobs["EARLY_SMEM"] = budget;
      if (cap != 0) knobs["EARLY_TPW"] = cap;
      auto rp = ResolvePlan(plan, *spec, BindSymbols(*spec, s, {{"rounding", "rceil"}}), knobs,
                            DeviceLimits{});
      ASSERT_TRUE(rp.ok()) << ShapeText(*spec, s) << ": " << rp.status().message();
      const ResolvedLaunch& l = rp->launches.back();
      ASSERT_EQ(l.kernel, "sm90_bf16_moe_permute_mxfp8_quantize_early") << ShapeText(*spec, s);
      int64_t tpw = std::max<int64_t>(1, budget / (4 * pitch));
      if (cap != 0) tpw = std::min(tpw, cap);
      if (h == 2048) {
        EXPECT_EQ(tpw, budget == 0 ? 1 : budget == 32768 ? 3 : 2);
      } else if (h == 4096) {
        EXPECT_EQ(tpw, cap != 0 ? 2 : 1);
      } else if (h == 7168) {
        EXPECT_EQ(tpw, 1);
      }
      if (tpw > 1) ++multi;
      ASSERT_FALSE(l.args.empty());
      EXPECT_EQ(l.args.back().value, tpw) << ShapeText(*spec, s);
      EXPECT_EQ(l.grid[0], (t + 4 * tpw - 1) / (4 * tpw)) << ShapeText(*spec, s);
      EXPECT_EQ(l.block[0], 128);
      EXPECT_EQ(l.smem, 4 * tpw * pitch) << ShapeText(*spec, s);
    }
  }
  EXPECT_GT(multi, 0);
}

// bf16_gemm and fp8_rowwise_gemm (their kernel.cu headers): 16 < M <= SPLIT_M runs split-K, in
// 32-column tiles where N <= NARROW_N (default 0: never; the knob's first run is queued), with no
// split where those tiles fill the SMs (M128 N1536: 96 tiles).
TEST(KernelPathsTest, SplitKNarrowTilesBelowNarrowN) {
  for (const std::string name : {"bf16_gemm", "fp8_rowwise_gemm"}) {
    auto spec = LoadProblem(kRoot + "/problems/" + name + "/spec.json");
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    const Plan plan = PlanOf(kRoot + "/kernels/" + name + "/kernel.cu");
    const std::string split = "sm90_sm100_" + name + "_splitk", narrow = split + "_narrow";
    int narrow_shapes = 0;
    for (const Shape& s : spec->bench_shapes) {
      const int64_t m = s.symbols.at("M"), n = s.symbols.at("N");
      if (m <= 16 || m > 128) continue;
      for (const int64_t narrow_n : {0, 2048}) {
        auto rp = ResolvePlan(plan, *spec, BindSymbols(*spec, s, {}), {{"NARROW_N", narrow_n}},
                              DeviceLimits{});
        ASSERT_TRUE(rp.ok()) << name << " " << ShapeText(*spec, s) << ": "
                             << rp.status().message();
        ASSERT_EQ(rp->launches.size(), 1u);
        const bool is_narrow = n <= narrow_n;
        narrow_shapes += is_narrow;
        EXPECT_EQ(rp->launches[0].kernel, is_narrow ? narrow : split) << ShapeText(*spec, s);
        if (is_narrow) {
          const int64_t tiles = (m + 63) / 64 * ((n + 31) / 32);
          EXPECT_EQ(rp->launches[0].grid[0], tiles) << "one unit per tile, no split";
          EXPECT_EQ(rp->launches[0].args.back().value, 1) << "splits";
        }
      }
    }
    EXPECT_GT(narrow_shapes, 0) << name;
  }
}

}  // namespace
}  // namespace ws
