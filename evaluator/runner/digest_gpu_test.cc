// Output digests through the real runner on a GPU: ws_runner runs a pattern kernel (compiled here
// to PTX with NVRTC) on outputs that differ by one byte, and the keyed digests it reports match
// the host reference (digest.h) on the dumped bytes, agree on identical outputs in every run
// (check, audited, last), and differ for a flipped first, middle, last-word or tail byte and for
// another key. Also the timing's fresh inputs, through a copy kernel. Skips where there is no GPU.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <nvrtc.h>

#include "base/status.h"
#include "evaluator/runner/digest.h"
#include "evaluator/runner/job.h"
#include "problems/init.h"

namespace ws::runner {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Not a multiple of 8: the last 3 bytes form the zero-padded tail word.
constexpr int64_t kBytes = 1000003;
constexpr uint64_t kKey = 0x0123456789ABCDEFull, kOtherKey = 0x0123456789ABCDEEull;

constexpr const char* kKernel = R"(
extern "C" __global__ void ws_test_pattern(unsigned char* out, long long n, long long flip) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned char v = (unsigned char)((i * 131 + 7) ^ (i >> 8));
    out[i] = i == flip ? (unsigned char)(v ^ 0x10) : v;
  }
}
extern "C" __global__ void ws_test_copy(const float* x, float* y, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    y[i] = x[i];
  }
}
)";

std::string CompilePtx() {
  nvrtcProgram prog;
  EXPECT_EQ(nvrtcCreateProgram(&prog, kKernel, "pattern.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  const char* opts[] = {"--gpu-architecture=compute_90"};
  EXPECT_EQ(nvrtcCompileProgram(prog, 1, opts), NVRTC_SUCCESS);
  size_t size = 0;
  nvrtcGetPTXSize(prog, &size);
  std::string ptx(size, '\0');
  nvrtcGetPTX(prog, ptx.data());
  nvrtcDestroyProgram(&prog);
  if (!ptx.empty() && ptx.back() == '\0')
    ptx.pop_back();
  return ptx;
}

json Case(const std::string& id, int64_t flip, bool digest, const std::string& dump,
          bool timed = false) {
  json c = {{"id", id},
            {"launches",
             {{{"kernel", "ws_test_pattern"},
               {"grid", {256}},
               {"block", {256}},
               {"args", {{{"tensor", "y"}}, {{"i64", kBytes}}, {{"i64", flip}}}}}}},
            {"tensors",
             {{{"name", "x"}, {"dtype", "f32"}, {"numel", 64}, {"role", "input"}},
              {{"name", "y"}, {"dtype", "u8"}, {"numel", kBytes}, {"role", "output"}}}},
            {"input_seeds", timed ? json{1, 2} : json{1}},
            {"poison", 0x5A},
            {"timing", nullptr},
            {"dump", dump}};
  if (digest)
    c["digest"] = {"y"};
  if (timed) {
    c["timing"] = {
        {"warmup", 1}, {"iterations", 4}, {"l2_flush_bytes", 1 << 20}, {"audit_iteration", 1}};
  }
  return c;
}

class DigestGpuTest : public testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists("/dev/nvidiactl"))
      GTEST_SKIP() << "no GPU here; GPU tests skipped";
    dir_ = testing::TempDir() + "/ws_digest_gpu_" + std::to_string(::getpid());
    fs::create_directories(dir_);
    ptx_ = dir_ + "/pattern.ptx";
    std::ofstream(ptx_) << CompilePtx();
  }
  void TearDown() override {
    if (!dir_.empty())
      fs::remove_all(dir_);
  }

  // Runs a job of `cases` under `key`; returns the result's cases by id.
  std::map<std::string, json> Run(const std::string& name, uint64_t key, const json& cases) {
    const std::string job_path = dir_ + "/" + name + ".job.json";
    json job = {{"cubin", ptx_},
                {"result", dir_ + "/" + name + ".result.json"},
                {"digest_key", fmt::format("{:016x}", key)},
                {"cases", cases}};
    std::ofstream(job_path) << job.dump();
    const std::string cmd = std::string(WS_BINARY_DIR) + "/ws_runner run " + job_path + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream rf(dir_ + "/" + name + ".result.json");
    json result = json::parse(rf);
    std::map<std::string, json> out;
    for (const auto& c : result["cases"]) {
      EXPECT_EQ(c["status"], "ok") << c.dump();
      EXPECT_TRUE(c["guards_intact"].get<bool>()) << c.dump();
      out[c["id"].get<std::string>()] = c;
    }
    return out;
  }

  std::string dir_, ptx_;
};

std::string Digest(const json& c, const std::string& tag) {
  if (!c.contains("digests") || !c["digests"].contains(tag))
    return "";
  return c["digests"][tag].value("y", "");
}

TEST_F(DigestGpuTest, DigestsMatchTheHostAndCatchEveryFlippedByte) {
  const std::string d = dir_ + "/d";
  json cases = json::array(
      {Case("dumped", -1, false, d + "-dumped"), Case("same-a", -1, true, d + "-a"),
       Case("same-b", -1, true, d + "-b"), Case("timed", -1, true, d + "-timed", true),
       Case("flip-first", 0, true, d + "-f0"), Case("flip-middle", kBytes / 2, true, d + "-f1"),
       Case("flip-last-word", kBytes - 4, true, d + "-f2"),
       Case("flip-tail", kBytes - 1, true, d + "-f3")});
  auto got = Run("key1", kKey, cases);
  ASSERT_EQ(got.size(), cases.size());

  // The device digest is the host reference's digest of the dumped bytes.
  std::ifstream in(d + "-dumped.check.y.bin", std::ios::binary);
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_EQ(static_cast<int64_t>(bytes.size()), kBytes);
  unsigned long long host[2];
  ws_digest_host(bytes.data(), kBytes, kKey, host);
  const std::string want = fmt::format("{:016x}{:016x}", host[0], host[1]);
  EXPECT_EQ(Digest(got["dumped"], "check"), "") << "a dumped output has no digest";

  const std::string a = Digest(got["same-a"], "check");
  EXPECT_EQ(a, want);
  EXPECT_EQ(Digest(got["same-b"], "check"), a);
  for (const char* tag : {"check", "audit", "last"}) {
    EXPECT_EQ(Digest(got["timed"], tag), a) << tag;
  }
  // A digested output is not written to a file.
  EXPECT_FALSE(fs::exists(d + "-a.check.y.bin"));
  EXPECT_FALSE(fs::exists(d + "-timed.audit.y.bin"));
  for (const char* id : {"flip-first", "flip-middle", "flip-last-word", "flip-tail"}) {
    const std::string f = Digest(got[id], "check");
    ASSERT_EQ(f.size(), 32u) << id;
    // Both 64-bit lanes change.
    EXPECT_NE(f.substr(0, 16), a.substr(0, 16)) << id;
    EXPECT_NE(f.substr(16), a.substr(16)) << id;
  }

  // Another key: another digest of the same bytes, again the host's.
  auto other = Run("key2", kOtherKey, json::array({Case("same-a", -1, true, d + "-k2")}));
  const std::string k2 = Digest(other["same-a"], "check");
  ws_digest_host(bytes.data(), kBytes, kOtherKey, host);
  EXPECT_EQ(k2, fmt::format("{:016x}{:016x}", host[0], host[1]));
  EXPECT_NE(k2.substr(0, 16), a.substr(0, 16));
  EXPECT_NE(k2.substr(16), a.substr(16));
}

// warmup_ms keeps warming up (synchronized runs) until that much wall time has passed; without it
// the runner does exactly `warmup` runs. The pattern kernel takes microseconds, so 30 ms of
// warm-up is many runs.
TEST_F(DigestGpuTest, WarmupMsWarmsUpForThatLong) {
  const std::string d = dir_ + "/w";
  json fixed = Case("fixed", -1, true, d + "-fixed", true);
  json timed = Case("timed", -1, true, d + "-timed", true);
  timed["timing"]["warmup_ms"] = 30;
  auto got = Run("warmup", 0x1234, json::array({fixed, timed}));
  ASSERT_TRUE(got["fixed"].contains("timing"));
  EXPECT_EQ(got["fixed"]["timing"]["warmup_runs"], 1);
  EXPECT_GT(got["timed"]["timing"]["warmup_runs"].get<int>(), 10);
  EXPECT_EQ(got["timed"]["timing"]["iterations"], 4);
}

TEST_F(DigestGpuTest, ADigestWithoutAKeyIsABadJob) {
  const std::string job_path = dir_ + "/nokey.job.json";
  json job = {{"cubin", ptx_},
              {"result", dir_ + "/nokey.result.json"},
              {"cases", json::array({Case("a", -1, true, dir_ + "/nokey")})}};
  std::ofstream(job_path) << job.dump();
  const std::string cmd = std::string(WS_BINARY_DIR) + "/ws_runner run " + job_path + " 2>&1";
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 2);  // kExitBadJob
}

// Fresh inputs (timing.fresh_seed): the check run sees input set 0 as its seed generates it, and
// the audited and the last timed run see their own inputs, generated from FreshRunSeed(fresh,
// iteration), which the orchestrator gives the reference for those two runs.
TEST_F(DigestGpuTest, FreshInputsGiveEveryTimedRunItsOwnInputs) {
  constexpr int64_t kN = 5000;
  constexpr uint64_t kFresh = 0x5c1f0e2b9a774d13ull;
  const std::string d = dir_ + "/fresh";
  json c = {{"id", "fresh"},
            {"launches",
             {{{"kernel", "ws_test_copy"},
               {"grid", {8}},
               {"block", {256}},
               {"args", {{{"tensor", "x"}}, {{"tensor", "y"}}, {{"i64", kN}}}}}}},
            {"tensors",
             {{{"name", "x"}, {"dtype", "f32"}, {"numel", kN}, {"role", "input"},
               {"init", {{"dist", "normal"}, {"mean", 0}, {"stddev", 1}}}},
              {{"name", "y"}, {"dtype", "f32"}, {"numel", kN}, {"role", "output"}}}},
            {"input_seeds", {11, 12}},
            {"poison", 0x5A},
            {"timing",
             {{"warmup", 2}, {"iterations", 6}, {"l2_flush_bytes", 1 << 20},
              {"audit_iteration", 3}, {"fresh_seed", fmt::format("{:016x}", kFresh)}}},
            {"dump", d}};
  auto got = Run("fresh", kKey, json::array({c}));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got["fresh"]["inputs_unchanged"].get<bool>());
  auto dumped = [&](const std::string& tag) {
    std::ifstream in(d + "." + tag + ".y.bin", std::ios::binary);
    std::vector<uint32_t> v(kN);
    in.read(reinterpret_cast<char*>(v.data()), kN * 4);
    EXPECT_EQ(in.gcount(), kN * 4) << tag;
    return v;
  };
  auto generated = [&](uint64_t seed) {
    std::vector<uint32_t> v(kN);
    for (int64_t i = 0; i < kN; ++i) {
      v[i] = static_cast<uint32_t>(ws_init_element(kWsDtypeF32, kWsDistNormal, 0, 1, seed, 0, i));
    }
    return v;
  };
  const auto check = dumped("check"), audit = dumped("audit"), last = dumped("last");
  EXPECT_EQ(check, generated(11));
  EXPECT_EQ(audit, generated(FreshRunSeed(kFresh, 3)));
  EXPECT_EQ(last, generated(FreshRunSeed(kFresh, 5)));
  // Not the sets' own inputs, which rotation alone would have given.
  EXPECT_NE(audit, generated(12));
  EXPECT_NE(last, generated(12));
  EXPECT_NE(audit, last);
}

}  // namespace
}  // namespace ws::runner
