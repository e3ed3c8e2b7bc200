// The checker: compares a candidate's outputs with the reference's, outside every runner, by each
// output's tolerance (docs/problem-format.md). Every failure says what, where and by how much.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "base/files.h"
#include "evaluator/checkers/router_topk.h"
#include "evaluator/internal.h"
#include "evaluator/runner/sample.h"

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

// Element `index`'s coordinates in `dims`; with `rows`, `index` counts in those rows (of the
// last dimension) of the tensor only, back to back (a sampled write-back).
std::string Coords(int64_t index, const std::vector<int64_t>& dims,
                   const std::vector<int64_t>* rows = nullptr) {
  if (rows != nullptr && !rows->empty() && !dims.empty()) {
    const int64_t len = std::max<int64_t>(dims.back(), 1);
    index = (*rows)[static_cast<size_t>(index / len)] * len + index % len;
  }
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

// ---- Chunked scans -----------------------------------------------------------------------------
// Bench outputs reach 10^9 elements per run, so a tensor of at least kParallelElements elements
// is scanned as kChunks chunks on CheckThreads() threads, and the chunks' findings are merged in
// chunk order. The split depends on the size alone: every result, the fp64 norm sums of the
// gemm check included, is the same bit for bit whatever the thread count. Smaller tensors are one
// chunk, scanned in order as before (starting threads would cost more than it saves).

constexpr int64_t kParallelElements = int64_t{1} << 20;
constexpr int64_t kChunks = 256;

std::atomic<int> g_check_threads{0};  // ScopedCheckThreads' override; 0: none

int64_t ChunkCount(int64_t n) {
  return n < kParallelElements ? 1 : kChunks;
}

// Where chunk c of `chunks` over [0, n) starts; the first n % chunks chunks are one longer.
int64_t ChunkBegin(int64_t n, int64_t chunks, int64_t c) {
  return c * (n / chunks) + std::min(c, n % chunks);
}

// What a scan found: how many elements failed, the first `max_reports` of them by index, and the
// worst element (the first of the largest badness).
struct Findings {
  int64_t count = 0;
  std::vector<int64_t> first;
  double worst = -HUGE_VAL;
  int64_t worst_at = -1;

  void Fail(int64_t i, int max_reports) {
    if (count++ < max_reports)
      first.push_back(i);
  }
  void Consider(int64_t i, double badness) {
    if (badness > worst) {  // strict: ties keep the lower index, as one in-order scan does
      worst = badness;
      worst_at = i;
    }
  }
};

// The chunks' findings, in chunk order: what one scan over the whole tensor would have found.
Findings Merge(std::vector<Findings>& parts, int max_reports) {
  Findings all;
  for (Findings& p : parts) {
    for (int64_t i : p.first) {
      if (static_cast<int64_t>(all.first.size()) < max_reports)
        all.first.push_back(i);
    }
    all.count += p.count;
    if (p.worst_at >= 0)
      all.Consider(p.worst_at, p.worst);
  }
  return all;
}

// Calls fn(i) for each i in [begin, end) whose `size` bytes differ between a and b. Equal runs,
// most of a good candidate's output, are skipped at memcmp speed.
template <int kSize, typename Fn>
void ForEachDifferingOf(const uint8_t* a, const uint8_t* b, int size, int64_t begin, int64_t end,
                        Fn fn) {
  constexpr int64_t kRun = 1024;
  for (int64_t r = begin; r < end; r += kRun) {
    const int64_t r_end = std::min(end, r + kRun);
    if (std::memcmp(a + r * size, b + r * size, (r_end - r) * size) == 0)
      continue;
    for (int64_t i = r; i < r_end; ++i) {
      // kSize > 0: a fixed size the compiler inlines; else `size` bytes.
      const int n = kSize > 0 ? kSize : size;
      if (std::memcmp(a + i * n, b + i * n, n) != 0)
        fn(i);
    }
  }
}

template <typename Fn>
void ForEachDiffering(const uint8_t* a, const uint8_t* b, int size, int64_t begin, int64_t end,
                      Fn fn) {
  switch (size) {
    case 1:
      return ForEachDifferingOf<1>(a, b, size, begin, end, fn);
    case 2:
      return ForEachDifferingOf<2>(a, b, size, begin, end, fn);
    case 4:
      return ForEachDifferingOf<4>(a, b, size, begin, end, fn);
    default:
      return ForEachDifferingOf<0>(a, b, size, begin, end, fn);
  }
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
// decided by this rule (a non-finite side), with *why (when not null) when it fails.
bool NonFiniteDecides(const FloatElem& g, const FloatElem& w, bool* ok, std::string* why) {
  if (!g.nan && !w.nan && !g.inf && !w.inf)
    return false;
  if (g.nan || w.nan) {
    *ok = g.nan && w.nan;
    if (!*ok && why != nullptr)
      *why = g.nan ? "NaN where the reference is not" : "not NaN where the reference is";
  } else {
    *ok = g.inf && w.inf && g.ordered == w.ordered;
    if (!*ok && why != nullptr)
      *why = "infinities must match exactly";
  }
  return true;
}

bool IsFloat(DType t) {
  return t == DType::kBF16 || t == DType::kF16 || t == DType::kF32;
}

// Per-element float comparison shared by ulp and close: `bad` says whether a finite pair fails,
// with a badness for picking the worst and, when its `why` is not null, by how much (formatted
// only for the failures reported). `equal_passes`: identical bytes always pass, so equal runs
// can be skipped.
template <typename Bad>
std::string CompareFloats(const std::string& tensor, const std::vector<int64_t>& dims, DType dtype,
                          std::string_view got, std::string_view want, int max_reports,
                          std::string_view rule, bool equal_passes, Bad bad,
                          const std::vector<int64_t>* rows) {
  if (!IsFloat(dtype)) {
    return fmt::format("{}: a {} tolerance on a {} tensor", tensor, rule, DTypeName(dtype));
  }
  if (got.size() != want.size()) {
    return fmt::format("{}: {} bytes written back, {} expected", tensor, got.size(), want.size());
  }
  const int size = DTypeSize(dtype);
  const int64_t n = static_cast<int64_t>(got.size()) / size;
  const auto* gp = reinterpret_cast<const uint8_t*>(got.data());
  const auto* wp = reinterpret_cast<const uint8_t*>(want.data());
  // Whether element i passes; else its badness and, with `why`, by how much.
  const auto judge = [&](int64_t i, double* badness, std::string* why) {
    const FloatElem g = DecodeFloat(dtype, gp + i * size), w = DecodeFloat(dtype, wp + i * size);
    bool ok = true;
    if (!NonFiniteDecides(g, w, &ok, why))
      return !bad(g, w, why, badness);
    if (!ok)
      *badness = HUGE_VAL;
    return ok;
  };
  const int64_t chunks = ChunkCount(n);
  std::vector<Findings> parts(chunks);
  RunChunks(chunks, [&](int64_t c) {
    Findings f;
    const auto visit = [&](int64_t i) {
      double badness = 0;
      if (judge(i, &badness, nullptr))
        return;
      f.Consider(i, badness);
      f.Fail(i, max_reports);
    };
    const int64_t begin = ChunkBegin(n, chunks, c), end = ChunkBegin(n, chunks, c + 1);
    if (equal_passes) {
      ForEachDiffering(gp, wp, size, begin, end, visit);
    } else {
      for (int64_t i = begin; i < end; ++i) visit(i);
    }
    parts[c] = std::move(f);
  });
  const Findings all = Merge(parts, max_reports);
  if (all.count == 0)
    return "";
  const auto text = [&](int64_t i) {
    double badness = 0;
    std::string why;
    judge(i, &badness, &why);
    return fmt::format("{}[{}]: got {}, expected {}: {}", tensor, Coords(i, dims, rows),
                       Elem(DecodeFloat(dtype, gp + i * size), size),
                       Elem(DecodeFloat(dtype, wp + i * size), size), why);
  };
  std::string msg;
  for (int64_t i : all.first) msg += (msg.empty() ? "" : "; ") + text(i);
  std::string out = fmt::format("{} ({} of {} elements outside {})", msg, all.count, n, rule);
  if (all.count > max_reports && all.worst_at >= 0)
    out += "; worst: " + text(all.worst_at);
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

// Whether fp8 code cg at e8m0 scale sg matches cw at sw, both dequantized on the larger scale's
// grid, within max_ulp ulps; else, with `why` not null, why not.
bool MxElemOk(uint8_t cg, uint8_t cw, int sg, int sw, const Fp8Format& f, int64_t max_ulp,
              std::string* why) {
  const int big = std::max(sg, sw);
  const double vg = std::ldexp(Fp8Value(cg, f), sg - big);
  const double vw = std::ldexp(Fp8Value(cw, f), sw - big);
  if (std::isnan(vg) || std::isnan(vw)) {
    if (why != nullptr)
      *why = std::isnan(vg) ? "NaN where the reference is not" : "not NaN where the reference is";
    return std::isnan(vg) && std::isnan(vw);
  }
  if (std::isinf(vg) || std::isinf(vw)) {
    if (why != nullptr)
      *why = "infinities must match exactly";
    return vg == vw;
  }
  const double d = std::fabs(vg - vw) / Fp8Ulp(std::max(std::fabs(vg), std::fabs(vw)), f);
  if (why != nullptr)
    *why = fmt::format("{} ulps apart at scale 0x{:02x} (max {})", Num(d), big, max_ulp);
  return d <= static_cast<double>(max_ulp);
}

}  // namespace

int CheckThreads() {
  if (const int forced = g_check_threads.load(); forced > 0)
    return forced;
  if (const char* env = std::getenv("WARPSMITH_CHECK_THREADS")) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v > 0)
      return static_cast<int>(std::min<long>(v, 1024));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

ScopedCheckThreads::ScopedCheckThreads(int threads)
    : previous_(g_check_threads.exchange(threads)) {}

ScopedCheckThreads::~ScopedCheckThreads() {
  g_check_threads.store(previous_);
}

void RunChunks(int64_t chunks, const std::function<void(int64_t)>& fn) {
  const int64_t threads = std::min<int64_t>(CheckThreads(), chunks);
  if (threads <= 1) {
    for (int64_t c = 0; c < chunks; ++c) fn(c);
    return;
  }
  std::atomic<int64_t> next{0};
  std::mutex mu;
  std::exception_ptr error;
  const auto work = [&] {
    for (int64_t c; (c = next.fetch_add(1)) < chunks;) {
      try {
        fn(c);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error)
          error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (int64_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones running (and this one) take every chunk
    }
  }
  work();
  for (std::thread& t : pool) t.join();
  if (error)
    std::rethrow_exception(error);
}

std::string CompareExact(const std::string& tensor, const std::vector<int64_t>& dims, int elem_size,
                         std::string_view got, std::string_view want, int max_reports) {
  if (got.size() != want.size()) {
    return fmt::format("{}: {} bytes written back, {} expected", tensor, got.size(), want.size());
  }
  const int64_t n = static_cast<int64_t>(got.size()) / elem_size;
  const auto* gp = reinterpret_cast<const uint8_t*>(got.data());
  const auto* wp = reinterpret_cast<const uint8_t*>(want.data());
  const int64_t chunks = ChunkCount(n);
  std::vector<Findings> parts(chunks);
  RunChunks(chunks, [&](int64_t c) {
    Findings f;
    ForEachDiffering(gp, wp, elem_size, ChunkBegin(n, chunks, c), ChunkBegin(n, chunks, c + 1),
                     [&](int64_t i) { f.Fail(i, max_reports); });
    parts[c] = std::move(f);
  });
  const Findings all = Merge(parts, max_reports);
  // Bytes past the last whole element make the buffers differ too.
  if (all.count == 0 && got.substr(n * elem_size) == want.substr(n * elem_size))
    return "";
  std::string msg;
  for (int64_t i : all.first) {
    msg += fmt::format("{}{}[{}]: got {}, expected {}", msg.empty() ? "" : "; ", tensor,
                       Coords(i, dims), Hex(got.substr(i * elem_size, elem_size)),
                       Hex(want.substr(i * elem_size, elem_size)));
  }
  return fmt::format("{} ({} of {} elements differ)", msg, all.count, n);
}

std::string CompareUlp(const std::string& tensor, const std::vector<int64_t>& dims, DType dtype,
                       std::string_view got, std::string_view want, int64_t max_ulp,
                       int max_reports, const std::vector<int64_t>* rows) {
  return CompareFloats(
      tensor, dims, dtype, got, want, max_reports, fmt::format("{} ulp", max_ulp), max_ulp >= 0,
      [&](const FloatElem& g, const FloatElem& w, std::string* why, double* badness) {
        const int64_t d = g.ordered > w.ordered ? g.ordered - w.ordered : w.ordered - g.ordered;
        if (d <= max_ulp)
          return false;
        if (why != nullptr)
          *why = fmt::format("{} ulps apart (max {})", d, max_ulp);
        *badness = static_cast<double>(d);
        return true;
      },
      rows);
}

std::string CompareClose(const std::string& tensor, const std::vector<int64_t>& dims, DType dtype,
                         std::string_view got, std::string_view want, double rtol, double atol,
                         int max_reports, const std::vector<int64_t>* rows) {
  return CompareFloats(
      tensor, dims, dtype, got, want, max_reports,
      fmt::format("atol {} + rtol {} * |want|", Num(atol), Num(rtol)), atol >= 0 && rtol >= 0,
      [&](const FloatElem& g, const FloatElem& w, std::string* why, double* badness) {
        const double diff = std::fabs(g.value - w.value);
        const double bound = atol + rtol * std::fabs(w.value);
        if (diff <= bound)
          return false;
        if (why != nullptr)
          *why = fmt::format("|diff| {} > {}", Num(diff), Num(bound));
        *badness = bound > 0 ? diff / bound : HUGE_VAL;
        return true;
      },
      rows);
}

// The spacing of the float type's values at magnitude `a`: two correct kernels whose fp32 sums
// differ in the last bits round to neighbouring stored values, one such spacing apart.
double StorageUlp(DType dtype, double a) {
  int mantissa = 23, min_exp = -126;
  if (dtype == DType::kBF16) {
    mantissa = 7;
  } else if (dtype == DType::kF16) {
    mantissa = 10;
    min_exp = -14;
  }
  const int e = a > 0 ? std::max(std::ilogb(a), min_exp) : min_exp;
  return std::ldexp(1.0, e - mantissa);
}

std::string CompareGemm(const std::string& tensor, const std::vector<int64_t>& dims, DType dtype,
                        std::string_view got, std::string_view want, const Tolerance& tol,
                        int max_reports, const std::vector<int64_t>* rows) {
  if (!IsFloat(dtype))
    return fmt::format("{}: a gemm tolerance on a {} tensor", tensor, DTypeName(dtype));
  if (got.size() != want.size()) {
    return fmt::format("{}: {} bytes written back, {} expected", tensor, got.size(), want.size());
  }
  const int size = DTypeSize(dtype);
  const int64_t n = static_cast<int64_t>(got.size()) / size;
  if (n == 0)
    return "";
  // Two streaming passes over the bytes (outputs reach 10^8 elements), each in chunks: norms,
  // then elements.
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
  const int64_t row_len = dims.empty() ? n : std::max<int64_t>(dims.back(), 1);
  // Whether the reference's row (last dim) holding element i is all zeros. A row may straddle
  // two chunks: it is read from the reference, which no chunk writes.
  const auto reference_row_is_zero = [&](int64_t i) {
    const int64_t row = i / row_len;
    for (int64_t j = row * row_len; j < std::min(n, (row + 1) * row_len); ++j) {
      if (DecodeFloat(dtype, wp + j * size).value != 0)
        return false;
    }
    return true;
  };
  const int64_t chunks = ChunkCount(n);
  // Pass 1, per chunk: the norms' partial sums (added up in chunk order below), or the first
  // element that fails outright.
  struct Norms {
    double diff2 = 0, want2 = 0;
    int64_t counted = 0, fails_at = -1;
  };
  std::vector<Norms> norms(chunks);
  std::atomic<int64_t> failed_chunk{chunks};  // the lowest chunk known to fail outright
  RunChunks(chunks, [&](int64_t c) {
    if (failed_chunk.load(std::memory_order_relaxed) < c)
      return;  // an earlier chunk's failure decides; this one's sums are never used
    Norms s;
    // The zero-row verdict, cached one row at a time (the scan is in order).
    int64_t zero_row_cached = -1;
    bool zero_row = false;
    for (int64_t i = ChunkBegin(n, chunks, c), end = ChunkBegin(n, chunks, c + 1); i < end; ++i) {
      const FloatElem ge = DecodeFloat(dtype, gp + i * size);
      const FloatElem we = DecodeFloat(dtype, wp + i * size);
      bool ok = true;
      if (NonFiniteDecides(ge, we, &ok, nullptr)) {
        // A non-finite result fails unless the reference has the same non-finite value there.
        if (!ok) {
          s.fails_at = i;
          break;
        }
        continue;
      }
      // A reference row of exact zeros (an empty group, an all-zero input row) is sums of no or
      // of zero products: a kernel that computed it writes +-0. Anything else there is an
      // unwritten output whose poison decodes to a tiny value, which the norms below would let
      // pass. A lone exact zero is different: an fp32 sum of many products cancels to exactly 0
      // now and then (about once per 10^8 outputs of random data), and other summation orders
      // give a tiny value there, which the element rule below judges.
      if (we.value == 0 && ge.value != 0) {
        if (i / row_len != zero_row_cached) {
          zero_row_cached = i / row_len;
          zero_row = reference_row_is_zero(i);
        }
        if (zero_row) {
          s.fails_at = i;
          break;
        }
      }
      s.diff2 += (ge.value - we.value) * (ge.value - we.value);
      s.want2 += we.value * we.value;
      ++s.counted;
    }
    if (s.fails_at >= 0) {
      int64_t seen = failed_chunk.load();
      while (c < seen && !failed_chunk.compare_exchange_weak(seen, c)) {
      }
    }
    norms[c] = s;
  });
  double diff2 = 0, want2 = 0;
  int64_t counted = 0;
  for (const Norms& s : norms) {
    if (s.fails_at >= 0) {
      const int64_t i = s.fails_at;
      const FloatElem ge = DecodeFloat(dtype, gp + i * size);
      const FloatElem we = DecodeFloat(dtype, wp + i * size);
      bool ok = true;
      std::string why;
      if (NonFiniteDecides(ge, we, &ok, &why)) {
        return fmt::format("{}[{}]: got {}, expected {}: {}", tensor, Coords(i, dims, rows),
                           Elem(ge, size), Elem(we, size), why);
      }
      return fmt::format(
          "{}[{}]: got {} where the reference's whole row is exactly 0 (exact "
          "zeros must be written as +-0: is this row computed at all?)",
          tensor, Coords(i, dims, rows), Elem(ge, size));
    }
    diff2 += s.diff2;
    want2 += s.want2;
    counted += s.counted;
  }
  const double rms = counted ? std::sqrt(want2 / counted) : 0;
  const double rel = want2 > 0 ? std::sqrt(diff2 / want2) : (diff2 > 0 ? HUGE_VAL : 0);
  // Pass 2: the elements against the bound, and the largest |diff| beyond one stored spacing
  // of the output type (the worst rule judges that: the reference rounds its fp32 sum once, and
  // a correct kernel's sum near a rounding midpoint lands on the neighbouring value).
  std::vector<Findings> parts(chunks);
  RunChunks(chunks, [&](int64_t c) {
    Findings f;
    for (int64_t i = ChunkBegin(n, chunks, c), end = ChunkBegin(n, chunks, c + 1); i < end; ++i) {
      double g, w;
      if (!values(i, &g, &w))
        continue;
      const double d = std::fabs(g - w);
      f.Consider(i, d - StorageUlp(dtype, std::fabs(w)));
      if (d > tol.elem_rtol * std::fabs(w) + tol.elem_rms * rms)
        f.Fail(i, max_reports);
    }
    parts[c] = std::move(f);
  });
  const Findings all = Merge(parts, max_reports);
  const int64_t outside = all.count;
  std::string first;
  for (int64_t i : all.first) {
    double g, w;
    values(i, &g, &w);
    first += fmt::format("{}{}[{}]: got {}, expected {} (|diff| {})", first.empty() ? "" : "; ",
                         tensor, Coords(i, dims, rows), Num(g), Num(w), Num(std::fabs(g - w)));
  }
  const double worst = all.worst;  // |diff| less one output spacing, at its largest
  std::string worst_text;
  if (all.worst_at >= 0) {
    double g, w;
    values(all.worst_at, &g, &w);
    worst_text = fmt::format(
        "largest |diff| beyond one output spacing {} = {} rms(want) at {}[{}] (got {}, expected "
        "{})",
        Num(worst), Num(rms > 0 ? worst / rms : HUGE_VAL), tensor, Coords(all.worst_at, dims, rows),
        Num(g), Num(w));
  }
  if (rel > tol.rel_frobenius) {
    return fmt::format("{}: relative Frobenius error {} > {} (rms(want) {}); {}", tensor, Num(rel),
                       Num(tol.rel_frobenius), Num(rms), worst_text);
  }
  if (all.worst_at >= 0 && worst > tol.worst_rms * rms) {
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
  // Equal codes at equal scales pass: such blocks (most of a good candidate's) are skipped.
  const bool equal_passes = tol.max_ulp >= 0;
  // A failure: a block's scale (elem < 0) or an element of its data; in scan order.
  struct Failure {
    int64_t block, elem;
  };
  struct Part {
    int64_t bad = 0, off_by_one = 0, first_off = -1;
    std::vector<Failure> first;
  };
  const int64_t blocks = rows * per_row;
  const int64_t chunks = ChunkCount(n);
  std::vector<Part> parts(chunks);
  RunChunks(chunks, [&](int64_t c) {
    Part p;
    const auto fail = [&](int64_t si, int64_t i) {
      if (p.bad++ < max_reports)
        p.first.push_back({si, i});
    };
    for (int64_t si = ChunkBegin(blocks, chunks, c), end = ChunkBegin(blocks, chunks, c + 1);
         si < end; ++si) {
      const int64_t r = si / per_row, b = si % per_row;
      const int sg = u8(got_scales, si), sw = u8(want_scales, si);
      if (sg != sw) {
        if (sg == 0xFF || sw == 0xFF || std::abs(sg - sw) > 1) {
          fail(si, -1);
          continue;
        }
        if (p.off_by_one++ == 0)
          p.first_off = si;
      }
      if (sg == 0xFF)
        continue;  // both NaN scales: every element is NaN
      const int64_t i0 = r * last + b * 32, i1 = r * last + std::min(last, b * 32 + 32);
      if (sg == sw && equal_passes &&
          std::memcmp(got_data.data() + i0, want_data.data() + i0, i1 - i0) == 0) {
        continue;
      }
      for (int64_t i = i0; i < i1; ++i) {
        const uint8_t cg = u8(got_data, i), cw = u8(want_data, i);
        if (sg == sw && cg == cw && equal_passes)
          continue;
        if (!MxElemOk(cg, cw, sg, sw, fmt8, tol.max_ulp, nullptr))
          fail(si, i);
      }
    }
    parts[c] = std::move(p);
  });
  int64_t bad = 0, off_by_one = 0, first_off = -1;
  std::vector<Failure> first;
  for (const Part& p : parts) {
    for (const Failure& f : p.first) {
      if (static_cast<int64_t>(first.size()) < max_reports)
        first.push_back(f);
    }
    bad += p.bad;
    if (first_off < 0)
      first_off = p.first_off;
    off_by_one += p.off_by_one;
  }
  // "s[r, b] (elements 32b..32b+31 of q): got 0x.., expected 0x..", for block si.
  const auto scale_text = [&](int64_t si) {
    const int64_t b = si % per_row;
    return fmt::format("{}[{}] (elements {}..{} of {}): got 0x{:02x}, expected 0x{:02x}", scales,
                       Coords(si, sdims), b * 32, std::min(last, b * 32 + 32) - 1, data,
                       u8(got_scales, si), u8(want_scales, si));
  };
  if (bad > 0) {
    std::string msg;
    for (const Failure& f : first) {
      msg += msg.empty() ? "" : "; ";
      if (f.elem < 0) {
        msg += scale_text(f.block);
        continue;
      }
      const int sg = u8(got_scales, f.block), sw = u8(want_scales, f.block);
      const uint8_t cg = u8(got_data, f.elem), cw = u8(want_data, f.elem);
      std::string why;
      MxElemOk(cg, cw, sg, sw, fmt8, tol.max_ulp, &why);
      msg += fmt::format(
          "{}[{}]: got 0x{:02x} * 2^({} - 127) = {}, expected 0x{:02x} * 2^({} - 127) = {}: {}",
          data, Coords(f.elem, dims), cg, sg, Num(std::ldexp(Fp8Value(cg, fmt8), sg - 127)), cw, sw,
          Num(std::ldexp(Fp8Value(cw, fmt8), sw - 127)), why);
    }
    return fmt::format("{} ({} mismatches)", msg, bad);
  }
  // A fraction above zero always tolerates one block: tiny test shapes would otherwise allow none.
  const double allowed =
      tol.scale_mismatch_fraction > 0
          ? std::max(1.0, tol.scale_mismatch_fraction * static_cast<double>(blocks))
          : 0.0;
  if (static_cast<double>(off_by_one) > allowed) {
    return fmt::format(
        "{}: {} of {} block scales differ by one, more than the allowed {:.4g}; first: {}", scales,
        off_by_one, blocks, allowed, scale_text(first_off));
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

TensorMap HostCopies(const TensorBytesMap& tensors) {
  TensorMap out;
  for (const auto& [name, t] : tensors) {
    out[name] = HostTensor{t.dtype, t.dims, std::vector<uint8_t>(t.bytes.begin(), t.bytes.end())};
  }
  return out;
}

}  // namespace

TensorBytesMap BytesOf(const TensorMap& tensors) {
  TensorBytesMap out;
  for (const auto& [name, t] : tensors) {
    out[name] = TensorBytes{
        t.dtype, t.dims,
        std::string_view(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size()), {}};
  }
  return out;
}

Result<std::string> CheckOutputs(const ProblemSpec& spec, const SymbolTable& symbols,
                                 const std::map<std::string, std::string>& params,
                                 const TensorBytesMap& got, const TensorBytesMap& want,
                                 const std::function<Result<TensorMap>()>& inputs,
                                 const std::vector<std::string>& digested) {
  std::set<std::string> customs_run;
  std::optional<TensorMap> in, got_host, want_host;
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
    // A sampled write-back (SampledOutputs): the bytes are those rows only.
    const std::vector<int64_t>* rows = w->second.rows.empty() ? nullptr : &w->second.rows;
    std::string diff;
    switch (tol.kind) {
      case ToleranceKind::kExact:
        diff = CompareExact(t.name, dims, DTypeSize(t.dtype), g->second.bytes, w->second.bytes);
        break;
      case ToleranceKind::kUlp:
        diff = CompareUlp(t.name, dims, t.dtype, g->second.bytes, w->second.bytes, tol.max_ulp,
                          kMaxReports, rows);
        break;
      case ToleranceKind::kClose:
        diff = CompareClose(t.name, dims, t.dtype, g->second.bytes, w->second.bytes, tol.rtol,
                            tol.atol, kMaxReports, rows);
        break;
      case ToleranceKind::kGemm:
        diff = CompareGemm(t.name, dims, t.dtype, g->second.bytes, w->second.bytes, tol,
                           kMaxReports, rows);
        break;
      case ToleranceKind::kMxData: {
        const auto gs = got.find(tol.partner);
        const auto ws = want.find(tol.partner);
        if (gs == got.end())
          return fmt::format("output '{}' was not written back", tol.partner);
        if (ws == want.end())
          return Status::Error("the reference produced no '{}'", tol.partner);
        diff = CompareMx(t.name, tol.partner, dims, t.dtype, g->second.bytes, w->second.bytes,
                         gs->second.bytes, ws->second.bytes, tol);
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
        if (!got_host) {
          got_host = HostCopies(got);
          want_host = HostCopies(want);
        }
        diff = (*fn)(
            CustomCheck{spec, symbols, params, tol.options, t.name, *in, *want_host, *got_host});
        break;
      }
    }
    if (!diff.empty() && rows != nullptr) {
      diff += fmt::format(" (checked on {} of its {} rows, drawn at random after the run)",
                          rows->size(), LeadingRows(dims));
    }
    if (!diff.empty())
      return diff;
  }
  return std::string();
}

std::string DumpPath(const std::string& prefix, const std::string& tag, const std::string& tensor) {
  return fmt::format("{}.{}.{}.bin", prefix, tag, tensor);
}

Result<std::string> CompareDumps(const ProblemSpec& spec, const SymbolTable& symbols,
                                 const std::map<std::string, std::string>& params, uint64_t seed,
                                 const std::string& got_prefix, const std::string& got_tag,
                                 const std::string& want_prefix,
                                 const std::vector<std::string>& digested,
                                 const SampledOutputs* sample) {
  // Mapped, not read: the runners have exited, and a copy of gigabytes into fresh memory cost
  // more than the comparison itself.
  std::vector<MappedFile> files;
  TensorBytesMap got, want;
  for (const auto& t : spec.tensors) {
    if (t.role != TensorRole::kOutput) continue;
    if (std::find(digested.begin(), digested.end(), t.name) != digested.end()) continue;
    WS_ASSIGN_OR_RETURN(auto dims, TensorDims(t, symbols));
    auto g = MappedFile::Open(DumpPath(got_prefix, got_tag, t.name));
    if (!g.ok()) return std::string(fmt::format("output '{}' was not written back", t.name));
    WS_ASSIGN_OR_RETURN(MappedFile w, MappedFile::Open(DumpPath(want_prefix, "check", t.name)));
    // The reference's dump must be the whole tensor, or its sampled rows: else the comparison
    // would judge the candidate against a misread reference.
    WS_ASSIGN_OR_RETURN(int64_t numel, TensorNumel(t, symbols));
    size_t expect = static_cast<size_t>(numel * DTypeSize(t.dtype));
    std::vector<int64_t> rows;
    const char* what = "";
    if (sample != nullptr) {
      if (auto it = sample->row_bytes.find(t.name); it != sample->row_bytes.end()) {
        rows = runner::SampledRows(sample->key, static_cast<int64_t>(expect) / it->second,
                                   sample->every);
        expect = rows.size() * static_cast<size_t>(it->second);
        what = "sampled rows of ";
      }
    }
    if (w.bytes().size() != expect) {
      return Status::Error("the reference wrote back {} bytes of the {}'{}', {} expected",
                           w.bytes().size(), what, t.name, expect);
    }
    got[t.name] = TensorBytes{t.dtype, dims, g->bytes(), rows};
    want[t.name] = TensorBytes{t.dtype, dims, w.bytes(), std::move(rows)};
    files.push_back(std::move(*g));
    files.push_back(std::move(w));
  }
  // Custom checkers see the inputs: regenerated on the host, bit for bit the device's.
  return CheckOutputs(spec, symbols, params, got, want,
                      [&]() { return GenerateInputs(spec, symbols, seed); }, digested);
}

}  // namespace ws
