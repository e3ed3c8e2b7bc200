// The host side of a check, on dump files as the runners leave them: rmsnorm_quantize's outputs
// (y bf16 under the ulp tolerance, q and scales under mx_data) at one bench shape, compared by
// reading each dump into memory (the evaluator's way until 2026-12-05) and by mapping it
// (CompareDumps). The candidate differs from the reference by one bf16 ulp and one E4M3 code
// in every 9973rd element, as a fast kernel's rounding does. Prints JSON.
//
//   build/ws_check_bench [--rows M] [--dir DIR] [--rounds N]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "base/files.h"
#include "evaluator/internal.h"
#include "problems/problems.h"

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "ws_check_bench: %s\n", what.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t rows = 131072;
  std::string dir = std::filesystem::temp_directory_path().string();
  int rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--rows") {
      rows = std::atoll(argv[i + 1]);
    } else if (flag == "--dir") {
      dir = argv[i + 1];
    } else if (flag == "--rounds") {
      rounds = std::atoi(argv[i + 1]);
    } else {
      return Fail("unknown flag " + flag + " (--rows M, --dir DIR, --rounds N)");
    }
  }
  constexpr int64_t kHidden = 4096;
  if (rows < 1 || rounds < 1) return Fail("--rows and --rounds must be positive");
  auto spec = ws::LoadProblem(std::string(WS_SOURCE_DIR) + "/problems/rmsnorm_quantize/spec.json");
  if (!spec.ok()) return Fail(spec.status().message());
  const ws::SymbolTable symbols = {{"M", rows}, {"H", kHidden}};
  const std::map<std::string, std::string> params = {{"rounding", "rceil"}};

  // The reference's outputs, then the candidate's: the same but for sparse one-step differences.
  const int64_t n = rows * kHidden;
  std::string y(static_cast<size_t>(n) * 2, '\0'), q(static_cast<size_t>(n), '\0'),
      scales(static_cast<size_t>(n / 32), '\0');
  std::mt19937_64 rng(1);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t v = static_cast<uint16_t>(0x3f00 + (rng() & 0x1ff));
    std::memcpy(&y[2 * i], &v, 2);
    q[i] = static_cast<char>(rng() & 0x6f);  // finite E4M3 codes
  }
  for (auto& s : scales) s = static_cast<char>(120 + rng() % 10);
  const std::string work = dir + "/ws_check_bench_" + std::to_string(::getpid());
  std::filesystem::create_directories(work);
  const std::string ref = work + "/ref", cand = work + "/cand";
  for (const std::string& prefix : {ref, cand}) {
    if (prefix == cand) {
      for (int64_t i = 0; i < n; i += 9973) {
        y[2 * i] ^= 1;
        q[i] ^= 1;
      }
    }
    for (const auto& [name, bytes] : {std::pair<const char*, const std::string*>{"y", &y},
                                      {"q", &q}, {"scales", &scales}}) {
      ws::Status s = ws::WriteFileAtomic(ws::DumpPath(prefix, "check", name), *bytes);
      if (!s.ok()) return Fail(s.message());
    }
  }
  std::string().swap(y);
  std::string().swap(q);

  const auto read_and_check = [&]() -> ws::Result<std::string> {
    ws::TensorMap got, want;
    for (const auto& t : spec->tensors) {
      if (t.role != ws::TensorRole::kOutput) continue;
      WS_ASSIGN_OR_RETURN(auto dims, ws::TensorDims(t, symbols));
      WS_ASSIGN_OR_RETURN(auto g, ws::ReadFileBytes(ws::DumpPath(cand, "check", t.name)));
      WS_ASSIGN_OR_RETURN(auto w, ws::ReadFileBytes(ws::DumpPath(ref, "check", t.name)));
      got[t.name] = ws::HostTensor{t.dtype, dims, std::move(g)};
      want[t.name] = ws::HostTensor{t.dtype, dims, std::move(w)};
    }
    return ws::CheckOutputs(*spec, symbols, params, got, want,
                            [] { return ws::Result<ws::TensorMap>(ws::TensorMap{}); });
  };
  std::string read_s, mapped_s, verdict;
  for (int r = 0; r < rounds; ++r) {
    double t = Now();
    auto a = read_and_check();
    const double read = Now() - t;
    t = Now();
    auto b = ws::CompareDumps(*spec, symbols, params, 1, cand, "check", ref, {});
    const double mapped = Now() - t;
    if (!a.ok()) return Fail(a.status().message());
    if (!b.ok()) return Fail(b.status().message());
    if (*a != *b) return Fail("the two paths disagree: " + *a + " | " + *b);
    verdict = a->empty() ? "pass" : "fail";
    read_s += fmt::format("{}{:.3f}", r ? ", " : "", read);
    mapped_s += fmt::format("{}{:.3f}", r ? ", " : "", mapped);
  }
  std::filesystem::remove_all(work);
  std::printf(
      "{\"problem\": \"rmsnorm_quantize\", \"shape\": {\"M\": %lld, \"H\": %lld}, "
      "\"dump_bytes_per_side\": %lld, \"check_threads\": %d, \"hardware_threads\": %u, "
      "\"verdict\": \"%s\", \"read_s\": [%s], \"mapped_s\": [%s]}\n",
      static_cast<long long>(rows), static_cast<long long>(kHidden),
      static_cast<long long>(n * 3 + n / 32), ws::CheckThreads(),
      std::thread::hardware_concurrency(), verdict.c_str(), read_s.c_str(), mapped_s.c_str());
  return 0;
}
