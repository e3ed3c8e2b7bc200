// Problem lint: spec checks beyond what the loader enforces, and a CPU-reference run that finds
// outputs a constant (or input-blind) kernel could reproduce.
#include "evaluator/lint.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "evaluator/internal.h"

namespace ws {
namespace {

// The loosest tolerances the lint accepts: a few ulps of the output format (bf16 carries 8
// significant bits, f16 11, f32 24; f32 outputs get room for reordered reductions).
constexpr int64_t kMaxUlp = 4;
constexpr double kMaxRtolBf16 = 1.0 / 64;  // 2^-6: 2 to 4 bf16 ulps
constexpr double kMaxRtolF16 = 1.0 / 512;  // 2^-9
constexpr double kMaxRtolF32 = 1e-4;
constexpr double kMaxAtolOfTypical = 0.01;  // atol against the reference's median |value|
constexpr double kMaxRelFrobenius = 1e-2;
constexpr double kMaxElemRtol = 1.0 / 16;
constexpr double kMaxElemRms = 1.0 / 32;
constexpr double kMinElemFraction = 0.99;
constexpr double kMaxWorstRms = 0.25;
constexpr int64_t kMaxMxUlp = 2;
constexpr double kMaxScaleMismatch = 0.01;
constexpr double kMaxOneValueFraction = 0.99;  // near-constant output
constexpr int64_t kMinElemsForConstancy = 16;  // below this, "99% one value" says little

constexpr uint64_t kSeedA = 0x5EED0001, kSeedB = 0x5EED0002;

double MaxRtol(DType t) {
  switch (t) {
    case DType::kBF16:
      return kMaxRtolBf16;
    case DType::kF16:
      return kMaxRtolF16;
    default:
      return kMaxRtolF32;
  }
}

// The median |value| of the finite nonzero elements: the output's typical magnitude, which a few
// huge values (quantizer inputs reach 2^127) do not move, unlike the rms. nullopt for other dtypes
// or when no element is finite and nonzero.
std::optional<double> TypicalMagnitude(const HostTensor& t) {
  if (t.dtype != DType::kBF16 && t.dtype != DType::kF32 && t.dtype != DType::kF16) {
    return std::nullopt;
  }
  std::vector<double> mags;
  const int size = DTypeSize(t.dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v;
    if (t.dtype == DType::kF32) {
      float f;
      std::memcpy(&f, t.bytes.data() + i * 4, 4);
      v = f;
    } else {
      uint16_t h;
      std::memcpy(&h, t.bytes.data() + i * size, 2);
      if (t.dtype == DType::kBF16) {
        const uint32_t w = static_cast<uint32_t>(h) << 16;
        float f;
        std::memcpy(&f, &w, 4);
        v = f;
      } else {
        const int e = (h >> 10) & 0x1F;
        if (e == 0x1F)
          continue;
        v = e == 0 ? std::ldexp(h & 0x3FF, -24) : std::ldexp(1024 + (h & 0x3FF), e - 25);
      }
    }
    if (std::isfinite(v) && v != 0)
      mags.push_back(std::fabs(v));
  }
  if (mags.empty())
    return std::nullopt;
  auto mid = mags.begin() + static_cast<std::ptrdiff_t>(mags.size() / 2);
  std::nth_element(mags.begin(), mid, mags.end());
  return *mid;
}

// The share of the most common element value (bitwise).
double OneValueFraction(const HostTensor& t) {
  const int size = DTypeSize(t.dtype);
  std::map<std::string, int64_t> counts;
  int64_t top = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const std::string key(reinterpret_cast<const char*>(t.bytes.data()) + i * size, size);
    top = std::max(top, ++counts[key]);
  }
  return t.numel() ? static_cast<double>(top) / t.numel() : 0;
}

int64_t ShapeBytes(const ProblemSpec& spec, const Shape& s) {
  const SymbolTable sym = BindSymbols(spec, s, {});
  int64_t total = 0;
  for (const TensorSpec& t : spec.tensors) {
    auto n = TensorNumel(t, sym);
    if (n.ok())
      total += *n * DTypeSize(t.dtype);
  }
  return total;
}

struct RunPair {
  TensorMap a, b;  // the reference's outputs on seeds A and B
};

Result<RunPair> RunTwice(const ProblemSpec& spec, const Shape& shape) {
  const std::map<std::string, std::string> params = *ResolveParams(spec, {});
  const SymbolTable sym = BindSymbols(spec, shape, params);
  RunPair r;
  for (auto [seed, out] : {std::pair{kSeedA, &r.a}, std::pair{kSeedB, &r.b}}) {
    WS_ASSIGN_OR_RETURN(TensorMap inputs, GenerateInputs(spec, sym, seed));
    WS_ASSIGN_OR_RETURN(*out, RunCpuReference(spec, sym, params, inputs));
  }
  return r;
}

// What the two runs at one shape show: output name -> the problem with it.
std::map<std::string, std::string> Degenerate(const ProblemSpec& spec, const RunPair& r) {
  std::map<std::string, std::string> out;
  for (const auto& [name, a] : r.a) {
    const HostTensor& b = r.b.at(name);
    if (a.numel() == 0)
      continue;
    if (a.bytes == b.bytes) {
      out[name] = "does not change when the inputs change";
      continue;
    }
    if (a.numel() < kMinElemsForConstancy)
      continue;
    const double fa = OneValueFraction(a), fb = OneValueFraction(b);
    if (fa > kMaxOneValueFraction && fb > kMaxOneValueFraction) {
      out[name] = fmt::format("is near-constant ({:.2f}% of its elements are one value)",
                              100 * std::min(fa, fb));
    }
  }
  return out;
}

void LintTolerances(const ProblemSpec& spec, std::vector<std::string>* f) {
  bool needs_reasoning = false;
  for (const TensorSpec& t : spec.tensors) {
    if (t.role != TensorRole::kOutput)
      continue;
    const auto it = spec.tolerance.find(t.name);
    if (it == spec.tolerance.end()) {
      f->push_back(fmt::format("output '{}' has no tolerance entry", t.name));
      continue;
    }
    const Tolerance& tol = it->second;
    const std::string at = fmt::format("tolerance.{}", t.name);
    needs_reasoning |= tol.kind != ToleranceKind::kExact;
    switch (tol.kind) {
      case ToleranceKind::kExact:
      case ToleranceKind::kMxScales:
        break;
      case ToleranceKind::kUlp:
        if (tol.max_ulp > kMaxUlp) {
          f->push_back(fmt::format("{}: max {} ulps is looser than {}", at, tol.max_ulp, kMaxUlp));
        }
        break;
      case ToleranceKind::kClose:
        if (tol.rtol > MaxRtol(t.dtype)) {
          f->push_back(fmt::format("{}: rtol {} is looser than {} for {}", at, tol.rtol,
                                   MaxRtol(t.dtype), DTypeName(t.dtype)));
        }
        break;
      case ToleranceKind::kGemm:
        if (tol.rel_frobenius > kMaxRelFrobenius) {
          f->push_back(fmt::format("{}: rel_frobenius {} is looser than {}", at, tol.rel_frobenius,
                                   kMaxRelFrobenius));
        }
        if (tol.elem_rtol > kMaxElemRtol) {
          f->push_back(
              fmt::format("{}: elem_rtol {} is looser than {}", at, tol.elem_rtol, kMaxElemRtol));
        }
        if (tol.elem_rms > kMaxElemRms) {
          f->push_back(
              fmt::format("{}: elem_rms {} is looser than {}", at, tol.elem_rms, kMaxElemRms));
        }
        if (tol.elem_fraction < kMinElemFraction) {
          f->push_back(fmt::format("{}: elem_fraction {} is looser than {}", at, tol.elem_fraction,
                                   kMinElemFraction));
        }
        if (tol.worst_rms > kMaxWorstRms) {
          f->push_back(
              fmt::format("{}: worst_rms {} is looser than {}", at, tol.worst_rms, kMaxWorstRms));
        }
        if (spec.cost_flops.empty()) {
          f->push_back(fmt::format("{}: a gemm tolerance but no cost.flops", at));
        }
        break;
      case ToleranceKind::kMxData:
        if (tol.max_ulp > kMaxMxUlp) {
          f->push_back(fmt::format("{}: max_ulp {} is looser than {}", at, tol.max_ulp, kMaxMxUlp));
        }
        if (tol.scale_mismatch_fraction > kMaxScaleMismatch) {
          f->push_back(fmt::format("{}: scale_mismatch_fraction {} is looser than {}", at,
                                   tol.scale_mismatch_fraction, kMaxScaleMismatch));
        }
        break;
      case ToleranceKind::kCustom:
        if (FindCustomChecker(tol.checker) == nullptr) {
          f->push_back(
              fmt::format("{}: no custom checker registered as '{}' "
                          "(evaluator/check.cc)",
                          at, tol.checker));
        }
        break;
    }
  }
  std::string lower = spec.description;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (needs_reasoning && lower.find("toleran") == std::string::npos) {
    f->push_back("the description does not explain its (non-exact) tolerance");
  }
}

}  // namespace

std::vector<std::string> LintProblem(const ProblemSpec& spec) {
  std::vector<std::string> f;
  if (spec.test_shapes.empty())
    f.push_back("no test shapes");
  if (spec.bench_shapes.empty())
    f.push_back("no bench shapes");
  if (spec.hidden_shapes.empty())
    f.push_back("no hidden shapes");
  if (spec.cost_bytes.empty())
    f.push_back("no cost.bytes");
  const std::map<std::string, std::string> params = *ResolveParams(spec, {});
  for (const Shape& s : spec.bench_shapes) {
    if (s.source.empty()) {
      f.push_back(fmt::format("bench shape {} has no source", ShapeText(spec, s)));
    }
    auto bytes = EvalExpr(spec.cost_bytes, BindSymbols(spec, s, params));
    if (bytes.ok() && *bytes <= 0) {
      f.push_back(fmt::format("cost.bytes is {} at bench shape {}", *bytes, ShapeText(spec, s)));
    }
  }
  LintTolerances(spec, &f);
  if (spec.test_shapes.empty())
    return f;

  // The reference on two seeds, at the smallest test shape. What looks degenerate there is a
  // finding only if every test shape shows it (a tiny shape may be mostly padding, or have k = 1
  // and constant weights); larger shapes run only while something is still suspect.
  std::vector<const Shape*> shapes;
  for (const Shape& s : spec.test_shapes) shapes.push_back(&s);
  std::stable_sort(shapes.begin(), shapes.end(), [&](const Shape* a, const Shape* b) {
    return ShapeBytes(spec, *a) < ShapeBytes(spec, *b);
  });
  std::optional<RunPair> largest;  // the largest shape's runs, where the loop reached it
  std::map<std::string, std::string> bad;
  for (const Shape* s : shapes) {
    auto runs = RunTwice(spec, *s);
    if (!runs.ok()) {
      f.push_back(fmt::format("the CPU reference fails at test shape {}: {}", ShapeText(spec, *s),
                              runs.status().message()));
      return f;
    }
    const std::map<std::string, std::string> here = Degenerate(spec, *runs);
    if (s == shapes.front()) {
      bad = here;
    } else {
      std::erase_if(bad, [&](const auto& kv) { return !here.contains(kv.first); });
      for (auto& [name, why] : bad) why = here.at(name);  // as the larger shape shows it
    }
    if (s == shapes.back())
      largest = std::move(*runs);
    if (bad.empty())
      break;
  }
  for (const auto& [name, why] : bad) {
    f.push_back(
        fmt::format("output '{}' {} at every test shape (CPU reference, two seeds; "
                    "largest {})",
                    name, why, ShapeText(spec, *shapes.back())));
  }
  // atol against the values it is meant for, at the largest test shape (one block of a tiny
  // shape may hold a single extreme or NaN scale).
  bool has_atol = false;
  for (const auto& [name, tol] : spec.tolerance) {
    has_atol = has_atol || (tol.kind == ToleranceKind::kClose && tol.atol != 0);
  }
  if (!has_atol)
    return f;
  if (!largest) {
    auto runs = RunTwice(spec, *shapes.back());
    if (!runs.ok()) {
      f.push_back(fmt::format("the CPU reference fails at test shape {}: {}",
                              ShapeText(spec, *shapes.back()), runs.status().message()));
      return f;
    }
    largest = std::move(*runs);
  }
  for (const auto& [name, tol] : spec.tolerance) {
    if (tol.kind != ToleranceKind::kClose || tol.atol == 0 || !largest->a.contains(name))
      continue;
    const auto typical = TypicalMagnitude(largest->a.at(name));
    if (typical && tol.atol > kMaxAtolOfTypical * *typical) {
      f.push_back(fmt::format(
          "tolerance.{}: atol {} is over {} of the output's median |value| {:.4g} at test shape {}",
          name, tol.atol, kMaxAtolOfTypical, *typical, ShapeText(spec, *shapes.back())));
    }
  }
  return f;
}

}  // namespace ws
