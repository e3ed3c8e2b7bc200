// The checker: compares a candidate's outputs with the reference's, outside every runner, by each
// output's tolerance (docs/problem-format.md). Every failure says what, where and by how much.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "evaluator/checkers/router_topk.h"
#include "evaluator/internal.h"

namespace ws {
namespace {

// The table of custom checkers, by the name a spec's {"kind": "custom", "checker": NAME} uses.
// Add a line per checker.
struct NamedChecker {
  const char* name;
  CustomChecker fn;
};
const NamedChecker kCustomCheckers[] = {
    {"router_topk",
     [](const CustomCheck& c) {
       return CheckRouterTopk(c.spec, c.symbols, c.params, c.options, c.inputs, c.got);
     }},
};

// Registered by tests only (ScopedCustomChecker).
std::vector<NamedChecker>& TestCheckers() {
  static std::vector<NamedChecker> checkers;
  return checkers;
}

std::string Coords(int64_t index, const std::vector<int64_t>& dims) {
  std::vector<int64_t> c(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    int64_t n = dims[d] > 0 ? dims[d] : 1;
    c[d] = index % n;
    index /= n;
  }
  std::string s;
  for (size_t d = 0; d < c.size(); ++d) s += (d ? ", " : "") + std::to_string(c[d]);
  return s;
}

std::string Hex(std::string_view bytes) {
  std::string s = "0x";
  // Little-endian element: print the most significant byte first.
  for (size_t i = bytes.size(); i-- > 0;)
    s += fmt::format("{:02x}", static_cast<uint8_t>(bytes[i]));
  return s;
}

// ---- Float formats -----------------------------------------------------------------------------

// A bf16/f16/f32 element: its value, class and position on the ordered line of its format.
struct FloatElem {
  double value = 0;
  bool nan = false, inf = false;
  int64_t ordered = 0;  // sign-magnitude folded onto integers: +0 and -0 are both 0
  uint32_t bits = 0;
};

double F16Value(uint32_t h) {
  const int e = static_cast<int>((h >> 10) & 0x1F);
  const double m = static_cast<double>(h & 0x3FF);
  const double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024.0 + m, e - 25);
  return (h & 0x8000) ? -mag : mag;
}

FloatElem DecodeFloat(DType t, const uint8_t* p) {
  FloatElem f;
  uint32_t mag = 0, sign = 0;
  if (t == DType::kF32) {
    std::memcpy(&f.bits, p, 4);
    float v;
    std::memcpy(&v, p, 4);
    f.value = v;
    mag = f.bits & 0x7FFFFFFFu;
    sign = f.bits >> 31;
    f.nan = mag > 0x7F800000u;
    f.inf = mag == 0x7F800000u;
  } else {
    uint16_t h;
    std::memcpy(&h, p, 2);
    f.bits = h;
    mag = h & 0x7FFFu;
    sign = h >> 15;
    if (t == DType::kBF16) {
      uint32_t w = static_cast<uint32_t>(h) << 16;
      float v;
      std::memcpy(&v, &w, 4);
      f.value = v;
      f.nan = mag > 0x7F80u;
      f.inf = mag == 0x7F80u;
    } else {
      f.value = F16Value(h);
      f.nan = mag > 0x7C00u;
      f.inf = mag == 0x7C00u;
      if (f.inf)
        f.value = sign ? -HUGE_VAL : HUGE_VAL;
    }
  }
  f.ordered = sign ? -static_cast<int64_t>(mag) : static_cast<int64_t>(mag);
  return f;
}

std::string Num(double v) {
  return fmt::format("{:.9g}", v);
}

std::string Elem(const FloatElem& f, int size) {
  return fmt::format("{} ({})", Num(f.value),
                     size == 2 ? fmt::format("0x{:04x}", f.bits) : fmt::format("0x{:08x}", f.bits));
}

// NaN only against NaN; an infinity only against the same infinity. Sets *ok when the pair is
// decided by this rule (a non-finite side), with *why when it fails.
bool NonFiniteDecides(const FloatElem& g, const FloatElem& w, bool* ok, std::string* why) {
  if (!g.nan && !w.nan && !g.inf && !w.inf)
    return false;
  if (g.nan || w.nan) {
    *ok = g.nan && w.nan;
    if (!*ok)
      *why = g.nan ? "NaN where the reference is not" : "not NaN where the reference is";
  } else {
    *ok = g.inf && w.inf && g.ordered == w.ordered;
    if (!*ok)
      *why = "infinities must match exactly";
  }
  return true;
}

bool IsFloat(DType t) {
  return t == DType::kBF16 || t == DType::kF16 || t == DType::kF32;
}

// Per-element float comparison shared by ulp and close: `bad` says whether a finite pair fails
// and fills its "by how much" text and a badness for picking the worst.
template <typename Bad>
std::string CompareFloats(const std::string& tensor, const std::vector<int64_t>& dims, DType dtype,
                          std::string_view got, std::string_view want, int max_reports,
                          std::string_view rule, Bad bad) {
  if (!IsFloat(dtype)) {
    return fmt::format("{}: a {} tolerance on a {} tensor", tensor, rule, DTypeName(dtype));
  }
  if (got.size() != want.size()) {
    return fmt::format("{}: {} bytes written back, {} expected", tensor, got.size(), want.size());
  }
  const int size = DTypeSize(dtype);
  const int64_t n = static_cast<int64_t>(got.size()) / size;
  std::string msg;
  int64_t failures = 0, worst_at = -1;
  double worst = -1;
  std::string worst_text;
  for (int64_t i = 0; i < n; ++i) {
    const auto* gp = reinterpret_cast<const uint8_t*>(got.data()) + i * size;
    const auto* wp = reinterpret_cast<const uint8_t*>(want.data()) + i * size;
    const FloatElem g = DecodeFloat(dtype, gp), w = DecodeFloat(dtype, wp);
    bool ok = true;
    std::string why;
    double badness = 0;
    if (!NonFiniteDecides(g, w, &ok, &why)) {
      ok = !bad(g, w, &why, &badness);
    } else if (!ok) {
      badness = HUGE_VAL;
    }
    if (ok)
      continue;
    const std::string text = fmt::format("{}[{}]: got {}, expected {}: {}", tensor, Coords(i, dims),
                                         Elem(g, size), Elem(w, size), why);
    if (failures < max_reports)
      msg += (msg.empty() ? "" : "; ") + text;
    if (badness > worst) {
      worst = badness;
      worst_at = i;
      worst_text = text;
    }
    ++failures;
  }
  if (failures == 0)
    return "";
  std::string out = fmt::format("{} ({} of {} elements outside {})", msg, failures, n, rule);
  if (failures > max_reports && worst_at >= 0)
    out += "; worst: " + worst_text;
  return out;
}

// ---- Microscaling formats -----------------------------------------------------------------------

struct Fp8Format {
  int man_bits, bias;
  bool has_inf;  // e5m2
};

Fp8Format Fp8Of(DType t) {
  return t == DType::kFP8E5M2 ? Fp8Format{2, 15, true} : Fp8Format{3, 7, false};
}

// An fp8 code's value; NaN as NaN, Inf as Inf.
double Fp8Value(uint8_t c, const Fp8Format& f) {
  const int exp_bits = 7 - f.man_bits;
  const int e = (c >> f.man_bits) & ((1 << exp_bits) - 1);
  const int m = c & ((1 << f.man_bits) - 1);
  const bool neg = (c & 0x80) != 0;
  double v;
  if (f.has_inf && e == (1 << exp_bits) - 1) {
    v = m == 0 ? HUGE_VAL : NAN;
  } else if (!f.has_inf && (c & 0x7F) == 0x7F) {
    v = NAN;
  } else if (e == 0) {
    v = std::ldexp(m, 1 - f.bias - f.man_bits);
  } else {
    v = std::ldexp((1 << f.man_bits) + m, e - f.bias - f.man_bits);
  }
  return neg ? -v : v;
}

// The format's ulp at magnitude `a` (in units where the scale is 1).
double Fp8Ulp(double a, const Fp8Format& f) {
  const int min_exp = 1 - f.bias;
  int e = a > 0 ? std::ilogb(a) : min_exp;
  if (e < min_exp)
    e = min_exp;
  return std::ldexp(1.0, e - f.man_bits);
}

}  // namespace

std::string CompareExact(const std::string& tensor, const std::vector<int64_t>& dims, int elem_size,
                         std::string_view got, std::string_view want, int max_reports) {
  if (got.size() != want.size()) {
    return fmt::format("{}: {} bytes written back, {} expected", tensor, got.size(), want.size());
  }
  if (got == want)
    return "";
  std::string msg;
  int64_t mismatches = 0;
  const int64_t n = static_cast<int64_t>(got.size()) / elem_size;
  for (int64_t i = 0; i < n; ++i) {
    std::string_view g = got.substr(i * elem_size, elem_size);
    std::string_view w = want.substr(i * elem_size, elem_size);
    if (g == w)
      continue;
    if (mismatches < max_reports) {
      msg += fmt::format("{}{}[{}]: got {}, expected {}", msg.empty() ? "" : "; ", tensor,
                         Coords(i, dims), Hex(g), Hex(w));
    }
    ++mismatches;
  }
  return fmt::format("{} ({} of {} elements differ)", msg, mismatches, n);
}

std::string CompareUlp(const std::string& tensor, const std::vector<int64_t>& dims, DType dtype,
                       std::string_view got, std::string_view want, int64_t max_ulp,
                       int max_reports) {
  return CompareFloats(
      tensor, dims, dtype, got, want, max_reports, fmt::format("{} ulp", max_ulp),
      [&](const FloatElem& g, const FloatElem& w, std::string* why, double* badness) {
        const int64_t d = g.ordered > w.ordered ? g.ordered - w.ordered : w.ordered - g.ordered;
        if (d <= max_ulp)
          return false;
        *why = fmt::format("{} ulps apart (max {})", d, max_ulp);
        *badness = static_cast<double>(d);
        return true;
      });
}

std::string CompareClose(const std::string& tensor, const std::vector<int64_t>& dims, DType dtype,
                         std::string_view got, std::string_view want, double rtol, double atol,
                         int max_reports) {
  return CompareFloats(
      tensor, dims, dtype, got, want, max_reports,
      fmt::format("atol {} + rtol {} * |want|", Num(atol), Num(rtol)),
      [&](const FloatElem& g, const FloatElem& w, std::string* why, double* badness) {
        const double diff = std::fabs(g.value - w.value);
        const double bound = atol + rtol * std::fabs(w.value);
        if (diff <= bound)
          return false;
        *why = fmt::format("|diff| {} > {}", Num(diff), Num(bound));
        *badness = bound > 0 ? diff / bound : HUGE_VAL;
        return true;
      });
}

std::string CompareGemm(const std::string& tensor, const std::vector<int64_t>& dims, DType dtype,
                        std::string_view got, std::string_view want, const Tolerance& tol,
                        int max_reports) {
  if (!IsFloat(dtype))
    return fmt::format("{}: a gemm tolerance on a {} tensor", tensor, DTypeName(dtype));
  if (got.size() != want.size()) {
    return fmt::format("{}: {} bytes written back, {} expected", tensor, got.size(), want.size());
  }
  const int size = DTypeSize(dtype);
  const int64_t n = static_cast<int64_t>(got.size()) / size;
  if (n == 0)
    return "";
  // Two streaming passes over the bytes (outputs reach 10^8 elements): norms, then elements.
  const auto* gp = reinterpret_cast<const uint8_t*>(got.data());
  const auto* wp = reinterpret_cast<const uint8_t*>(want.data());
  // Element i's values; false where both are the same non-finite value (left out).
  const auto values = [&](int64_t i, double* g, double* w) {
    const FloatElem ge = DecodeFloat(dtype, gp + i * size);
    const FloatElem we = DecodeFloat(dtype, wp + i * size);
    *g = ge.value;
    *w = we.value;
    return !(ge.nan || we.nan || ge.inf || we.inf);
  };
  double diff2 = 0, want2 = 0;
  int64_t counted = 0;
  // Whether the reference's row (last dim) holding element i is all zeros; rows cached one at a
  // time (the scan is in order).
  const int64_t row_len = dims.empty() ? n : std::max<int64_t>(dims.back(), 1);
  int64_t zero_row_cached = -1;
  bool zero_row = false;
  const auto reference_row_is_zero = [&](int64_t i) {
    const int64_t row = i / row_len;
    if (row != zero_row_cached) {
      zero_row_cached = row;
      zero_row = true;
      for (int64_t j = row * row_len; j < std::min(n, (row + 1) * row_len) && zero_row; ++j) {
        zero_row = DecodeFloat(dtype, wp + j * size).value == 0;
      }
    }
    return zero_row;
  };
  for (int64_t i = 0; i < n; ++i) {
    const FloatElem ge = DecodeFloat(dtype, gp + i * size);
    const FloatElem we = DecodeFloat(dtype, wp + i * size);
    bool ok = true;
    std::string why;
    if (NonFiniteDecides(ge, we, &ok, &why)) {
      // A non-finite result fails unless the reference has the same non-finite value there.
      if (!ok) {
        return fmt::format("{}[{}]: got {}, expected {}: {}", tensor, Coords(i, dims),
                           Elem(ge, size), Elem(we, size), why);
      }
      continue;
    }
    // A reference row of exact zeros (an empty group, an all-zero input row) is sums of no or of
    // zero products: a kernel that computed it writes +-0. Anything else there is an unwritten
    // output whose poison decodes to a tiny value, which the norms below would let pass. A lone
    // exact zero is different: an fp32 sum of many products cancels to exactly 0 now and then
    // (about once per 10^8 outputs of random data), and other summation orders give a tiny
    // value there, which the element rule below judges.
    if (we.value == 0 && ge.value != 0 && reference_row_is_zero(i)) {
      return fmt::format("{}[{}]: got {} where the reference's whole row is exactly 0 (exact "
                         "zeros must be written as +-0: is this row computed at all?)",
                         tensor, Coords(i, dims), Elem(ge, size));
    }
    diff2 += (ge.value - we.value) * (ge.value - we.value);
    want2 += we.value * we.value;
    ++counted;
  }
  const double rms = counted ? std::sqrt(want2 / counted) : 0;
  const double rel = want2 > 0 ? std::sqrt(diff2 / want2) : (diff2 > 0 ? HUGE_VAL : 0);
  int64_t outside = 0, worst_at = -1;
  double worst = -1, worst_g = 0, worst_w = 0;
  std::string first;
  int reported = 0;
  for (int64_t i = 0; i < n; ++i) {
    double g, w;
    if (!values(i, &g, &w))
      continue;
    const double d = std::fabs(g - w);
    if (d > worst) {
      worst = d;
      worst_at = i;
      worst_g = g;
      worst_w = w;
    }
    if (d <= tol.elem_rtol * std::fabs(w) + tol.elem_rms * rms)
      continue;
    ++outside;
    if (reported++ < max_reports) {
      first += fmt::format("{}{}[{}]: got {}, expected {} (|diff| {})", first.empty() ? "" : "; ",
                           tensor, Coords(i, dims), Num(g), Num(w), Num(d));
    }
  }
  const std::string worst_text =
      worst_at < 0 ? ""
                   : fmt::format("largest |diff| {} = {} rms(want) at {}[{}] (got {}, expected {})",
                                 Num(worst), Num(rms > 0 ? worst / rms : HUGE_VAL), tensor,
                                 Coords(worst_at, dims), Num(worst_g), Num(worst_w));
  if (rel > tol.rel_frobenius) {
    return fmt::format("{}: relative Frobenius error {} > {} (rms(want) {}); {}", tensor, Num(rel),
                       Num(tol.rel_frobenius), Num(rms), worst_text);
  }
  if (worst_at >= 0 && worst > tol.worst_rms * rms) {
    return fmt::format("{}: {}, beyond worst_rms {}", tensor, worst_text, Num(tol.worst_rms));
  }
  // The fraction within, with slack for 1 - 0.9999 not being exact in binary.
  const double within = static_cast<double>(counted - outside) / static_cast<double>(counted);
  if (counted > 0 && within < tol.elem_fraction - 1e-12) {
    return fmt::format(
        "{}: {} of {} elements ({:.4g}%) exceed elem_rtol {} * |want| + elem_rms {} * rms(want) "
        "(rms(want) {}); at most {:.4g}% may: {}",
        tensor, outside, counted, 100.0 * outside / counted, Num(tol.elem_rtol), Num(tol.elem_rms),
        Num(rms), 100.0 * (1.0 - tol.elem_fraction), first);
  }
  return "";
}

std::string CompareMx(const std::string& data, const std::string& scales,
                      const std::vector<int64_t>& dims, DType dtype, std::string_view got_data,
                      std::string_view want_data, std::string_view got_scales,
                      std::string_view want_scales, const Tolerance& tol, int max_reports) {
  if (dtype != DType::kFP8E4M3 && dtype != DType::kFP8E5M2) {
    return fmt::format("{}: an mx_data tolerance on a {} tensor", data, DTypeName(dtype));
  }
  if (got_data.size() != want_data.size()) {
    return fmt::format("{}: {} bytes written back, {} expected", data, got_data.size(),
                       want_data.size());
  }
  if (got_scales.size() != want_scales.size()) {
    return fmt::format("{}: {} bytes written back, {} expected", scales, got_scales.size(),
                       want_scales.size());
  }
  const int64_t last = dims.empty() ? 0 : dims.back();
  const int64_t n = static_cast<int64_t>(want_data.size());
  if (n == 0 || last == 0)
    return "";
  const int64_t rows = n / last, per_row = (last + 31) / 32;
  if (static_cast<int64_t>(want_scales.size()) != rows * per_row) {
    return fmt::format("{}: {} scales for {} rows of {} blocks", scales, want_scales.size(), rows,
                       per_row);
  }
  std::vector<int64_t> sdims = dims;
  sdims.back() = per_row;
  const Fp8Format fmt8 = Fp8Of(dtype);
  const auto u8 = [](std::string_view s, int64_t i) { return static_cast<uint8_t>(s[i]); };
  int64_t off_by_one = 0, bad = 0;
  std::string msg, first_off;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < per_row; ++b) {
      const int64_t si = r * per_row + b;
      const int sg = u8(got_scales, si), sw = u8(want_scales, si);
      const std::string where =
          fmt::format("{}[{}] (elements {}..{} of {})", scales, Coords(si, sdims), b * 32,
                      std::min(last, b * 32 + 32) - 1, data);
      if (sg != sw) {
        if (sg == 0xFF || sw == 0xFF || std::abs(sg - sw) > 1) {
          if (bad++ < max_reports) {
            msg += fmt::format("{}{}: got 0x{:02x}, expected 0x{:02x}", msg.empty() ? "" : "; ",
                               where, sg, sw);
          }
          continue;
        }
        if (off_by_one++ == 0) {
          first_off = fmt::format("{}: got 0x{:02x}, expected 0x{:02x}", where, sg, sw);
        }
      }
      if (sg == 0xFF)
        continue;  // both NaN scales: every element is NaN
      // The data, dequantized, on the grid of the larger scale.
      const int big = std::max(sg, sw);
      for (int64_t j = b * 32; j < std::min(last, b * 32 + 32); ++j) {
        const int64_t i = r * last + j;
        const uint8_t cg = u8(got_data, i), cw = u8(want_data, i);
        const double vg = std::ldexp(Fp8Value(cg, fmt8), sg - big);
        const double vw = std::ldexp(Fp8Value(cw, fmt8), sw - big);
        bool ok;
        std::string why;
        if (std::isnan(vg) || std::isnan(vw)) {
          ok = std::isnan(vg) && std::isnan(vw);
          why =
              std::isnan(vg) ? "NaN where the reference is not" : "not NaN where the reference is";
        } else if (std::isinf(vg) || std::isinf(vw)) {
          ok = vg == vw;
          why = "infinities must match exactly";
        } else {
          const double ulp = Fp8Ulp(std::max(std::fabs(vg), std::fabs(vw)), fmt8);
          const double d = std::fabs(vg - vw) / ulp;
          ok = d <= static_cast<double>(tol.max_ulp);
          why = fmt::format("{} ulps apart at scale 0x{:02x} (max {})", Num(d), big, tol.max_ulp);
        }
        if (ok)
          continue;
        if (bad++ < max_reports) {
          msg += fmt::format(
              "{}{}[{}]: got 0x{:02x} * 2^({} - 127) = {}, expected 0x{:02x} * 2^({} - 127) = {}: "
              "{}",
              msg.empty() ? "" : "; ", data, Coords(i, dims), cg, sg,
              Num(std::ldexp(Fp8Value(cg, fmt8), sg - 127)), cw, sw,
              Num(std::ldexp(Fp8Value(cw, fmt8), sw - 127)), why);
        }
      }
    }
  }
  if (bad > 0)
    return fmt::format("{} ({} mismatches)", msg, bad);
  const int64_t blocks = rows * per_row;
  // A fraction above zero always tolerates one block: tiny test shapes would otherwise allow none.
  const double allowed =
      tol.scale_mismatch_fraction > 0
          ? std::max(1.0, tol.scale_mismatch_fraction * static_cast<double>(blocks))
          : 0.0;
  if (static_cast<double>(off_by_one) > allowed) {
    return fmt::format(
        "{}: {} of {} block scales differ by one, more than the allowed {:.4g}; first: {}", scales,
        off_by_one, blocks, allowed, first_off);
  }
  return "";
}

const CustomChecker* FindCustomChecker(std::string_view name) {
  for (const NamedChecker& c : kCustomCheckers) {
    if (name == c.name)
      return &c.fn;
  }
  for (const NamedChecker& c : TestCheckers()) {
    if (name == c.name)
      return &c.fn;
  }
  return nullptr;
}

std::vector<std::string> CustomCheckerNames() {
  std::vector<std::string> out;
  for (const NamedChecker& c : kCustomCheckers) out.emplace_back(c.name);
  return out;
}

ScopedCustomChecker::ScopedCustomChecker(const char* name, CustomChecker fn) {
  TestCheckers().push_back({name, fn});
}

ScopedCustomChecker::~ScopedCustomChecker() {
  TestCheckers().pop_back();
}

namespace {

std::string_view View(const HostTensor& t) {
  return std::string_view(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
}

}  // namespace

Result<std::string> CheckOutputs(const ProblemSpec& spec, const SymbolTable& symbols,
                                 const std::map<std::string, std::string>& params,
                                 const TensorMap& got, const TensorMap& want,
                                 const std::function<Result<TensorMap>()>& inputs,
                                 const std::vector<std::string>& digested) {
  std::set<std::string> customs_run;
  std::optional<TensorMap> in;
  for (const TensorSpec& t : spec.tensors) {
    if (t.role != TensorRole::kOutput)
      continue;
    if (std::find(digested.begin(), digested.end(), t.name) != digested.end())
      continue;  // compared as digests (CompareDigests)
    const auto tol_it = spec.tolerance.find(t.name);
    if (tol_it == spec.tolerance.end()) {
      return Status::Error("{}: output '{}' has no tolerance", spec.name, t.name);
    }
    const Tolerance& tol = tol_it->second;
    const auto g = got.find(t.name);
    if (g == got.end())
      return fmt::format("output '{}' was not written back", t.name);
    const auto w = want.find(t.name);
    if (w == want.end())
      return Status::Error("the reference produced no '{}'", t.name);
    const std::vector<int64_t>& dims = w->second.dims;
    std::string diff;
    switch (tol.kind) {
      case ToleranceKind::kExact:
        diff = CompareExact(t.name, dims, DTypeSize(t.dtype), View(g->second), View(w->second));
        break;
      case ToleranceKind::kUlp:
        diff = CompareUlp(t.name, dims, t.dtype, View(g->second), View(w->second), tol.max_ulp);
        break;
      case ToleranceKind::kClose:
        diff = CompareClose(t.name, dims, t.dtype, View(g->second), View(w->second), tol.rtol,
                            tol.atol);
        break;
      case ToleranceKind::kGemm:
        diff = CompareGemm(t.name, dims, t.dtype, View(g->second), View(w->second), tol);
        break;
      case ToleranceKind::kMxData: {
        const auto gs = got.find(tol.partner);
        const auto ws = want.find(tol.partner);
        if (gs == got.end())
          return fmt::format("output '{}' was not written back", tol.partner);
        if (ws == want.end())
          return Status::Error("the reference produced no '{}'", tol.partner);
        diff = CompareMx(t.name, tol.partner, dims, t.dtype, View(g->second), View(w->second),
                         View(gs->second), View(ws->second), tol);
        break;
      }
      case ToleranceKind::kMxScales:
        break;  // with its data output
      case ToleranceKind::kCustom: {
        if (!customs_run.insert(tol.checker).second)
          break;  // one call covers every output
        const CustomChecker* fn = FindCustomChecker(tol.checker);
        if (fn == nullptr) {
          return Status::Error("{}: no custom checker registered as '{}' (evaluator/check.cc)",
                               spec.name, tol.checker);
        }
        if (!in) {
          WS_ASSIGN_OR_RETURN(TensorMap regenerated, inputs());
          in = std::move(regenerated);
        }
        diff = (*fn)(CustomCheck{spec, symbols, params, tol.options, t.name, *in, want, got});
        break;
      }
    }
    if (!diff.empty())
      return diff;
  }
  return std::string();
}

}  // namespace ws
