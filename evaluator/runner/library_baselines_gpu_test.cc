// Library baselines on a GPU: ws_runner runs both cuBLASLt ops on generated inputs
// of odd sizes and the outputs match a double-precision GEMM of the dumped inputs, so the layout
// (which operand is transposed) and the scale orientation (a_scale per row of D, b_scale per
// column) are pinned down. Skips where there is no GPU.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "evaluator/runner/library_baselines_test_util.h"

namespace ws::runner {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// ---- On a GPU -----------------------------------------------------------------------------------

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

double Bf16(const uint8_t* p) {
  const uint32_t bits = static_cast<uint32_t>(p[0] | (p[1] << 8)) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

double E4M3(uint8_t b) {
  const int e = (b >> 3) & 0xF, m = b & 7;
  const double v = e == 0 ? std::ldexp(m, -9) : std::ldexp(1.0 + m / 8.0, e - 7);
  return (b & 0x80) ? -v : v;
}

double F32(const uint8_t* p) {
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

class LibraryGpuTest : public testing::TestWithParam<std::string> {};

TEST_P(LibraryGpuTest, RunnerMatchesADoubleGemmOfTheDumpedInputs) {
  if (!fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "no GPU here; GPU tests skipped";
  const std::string op = GetParam();
  const bool fp8 = op == "fp8_rowwise_gemm";
  const std::string dir = testing::TempDir() + "/ws_library_" + op + std::to_string(::getpid());
  fs::create_directories(dir);
  // M odd, N and K multiples of 16 (cuBLASLt's FP8 alignment) but of no tile size.
  constexpr int64_t kM = 77, kN = 48, kK = 208;
  const std::string job_path = dir + "/job.json";
  std::ofstream(job_path) << GemmJob(op, kM, kN, kK, dir).dump();
  const std::string cmd = std::string(WS_BINARY_DIR) + "/ws_runner run " + job_path + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream rf(dir + "/result.json");
  json result = json::parse(rf);
  ASSERT_EQ(result["cases"].size(), 1u);
  const json& c = result["cases"][0];
  ASSERT_EQ(c["status"], "ok") << c.dump();
  EXPECT_TRUE(c["guards_intact"].get<bool>());
  EXPECT_TRUE(c["inputs_unchanged"].get<bool>());
  ASSERT_TRUE(c["timing"].is_object());
  EXPECT_GT(c["timing"]["median_us"].get<double>(), 0);
  std::printf("%s: %s\n", op.c_str(), c["library"].get<std::string>().c_str());

  const std::string pre = dir + "/" + op;
  const auto a = ReadBytes(pre + ".input.A.bin"), b = ReadBytes(pre + ".input.B.bin");
  const size_t in_size = fp8 ? 1 : 2;
  ASSERT_EQ(a.size(), kM * kK * in_size);
  ASSERT_EQ(b.size(), kN * kK * in_size);
  std::vector<uint8_t> sa, sb;
  if (fp8) {
    sa = ReadBytes(pre + ".input.a_scale.bin");
    sb = ReadBytes(pre + ".input.b_scale.bin");
    ASSERT_EQ(sa.size(), kM * 4u);
    ASSERT_EQ(sb.size(), kN * 4u);
  }
  auto value = [&](const std::vector<uint8_t>& t, int64_t i) {
    return fp8 ? E4M3(t[i]) : Bf16(&t[2 * i]);
  };
  std::vector<double> want(kM * kN);
  double sq = 0;
  for (int64_t m = 0; m < kM; ++m) {
    for (int64_t n = 0; n < kN; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < kK; ++k) acc += value(a, m * kK + k) * value(b, n * kK + k);
      if (fp8) acc *= F32(&sa[4 * m]) * F32(&sb[4 * n]);
      want[m * kN + n] = acc;
      sq += acc * acc;
    }
  }
  const double rms = std::sqrt(sq / static_cast<double>(kM * kN));
  ASSERT_GT(rms, 0);
  // The check run's outputs (input set 0, the one dumped). The timed runs replay a CUDA graph.
  for (const char* tag : {"check"}) {
    const auto d = ReadBytes(pre + "." + tag + ".D.bin");
    ASSERT_EQ(d.size(), kM * kN * 2u);
    double err2 = 0, worst = 0;
    for (int64_t i = 0; i < kM * kN; ++i) {
      const double got = Bf16(&d[2 * i]);
      ASSERT_TRUE(std::isfinite(got)) << tag << " element " << i;
      const double e = std::fabs(got - want[i]);
      err2 += e * e;
      worst = std::max(worst, e);
      // bf16 rounding of the output: half an ulp, 2^-9 relative, plus accumulation order.
      EXPECT_LE(e, std::fabs(want[i]) * 0x1p-8 + 1e-3 * rms)
          << tag << " (" << i / kN << ", " << i % kN << "): got " << got << " want " << want[i];
    }
    EXPECT_LE(std::sqrt(err2 / sq), 3e-3) << tag;
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Ops, LibraryGpuTest, testing::Values("bf16_gemm", "fp8_rowwise_gemm"));

}  // namespace
}  // namespace ws::runner
