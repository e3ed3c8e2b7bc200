// The hostile-candidate corpus: every tests/hostile/*.cu states its attack and the verdict it must
// get in its first line,
//
//   // hostile: expect=compile_error gpu=no what="absolute include of /etc/passwd" message="..."
//
// and this driver evaluates each against mxfp8_quantize_rowwise with ws::Evaluate and asserts it.
// Built twice: hostile_test (label unit) runs the gpu=no cases with compile_only; hostile_gpu_test
// (label gpu, WS_HOSTILE_GPU=1) runs the gpu=yes cases and skips where there is no GPU.
//
// Header keys: expect (a verdict name, or "rejected": anything but ok and not_run), gpu (yes|no),
// what, message (a substring of the verdict's message), log (a substring of the compile log),
// timing=yes (time the bench shapes), compile_timeout and case_timeout (seconds), pad=N (append an
// N-byte comment), inject=nul|latin1 (append a NUL byte or a non-UTF-8 byte).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "evaluator/evaluator.h"
#include "evaluator/source_check.h"
#include "problems/problems.h"

#ifndef WS_HOSTILE_GPU
#define WS_HOSTILE_GPU 0
#endif

namespace ws {
namespace {

namespace fs = std::filesystem;

const std::string kCorpusDir = std::string(WS_SOURCE_DIR) + "/tests/hostile";

std::string ReadText(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A case file with the shared helper spliced in where it asks for it.
std::string ReadCase(const std::string& path) {
  static constexpr char kMarker[] = "// hostile-helper: quantize_block.cuh";
  std::string src = ReadText(path);
  if (size_t at = src.find(kMarker); at != std::string::npos) {
    size_t eol = src.find('\n', at);
    src.replace(at, eol == std::string::npos ? std::string::npos : eol - at,
                ReadText(kCorpusDir + "/quantize_block.cuh"));
  }
  return src;
}

struct HostileCase {
  std::string file;  // file name, e.g. "c01_abs_include_etc_passwd.cu"
  std::map<std::string, std::string> keys;
  std::string parse_error;

  std::string Get(const std::string& k, const std::string& def = "") const {
    auto it = keys.find(k);
    return it == keys.end() ? def : it->second;
  }
  bool gpu() const { return Get("gpu") == "yes"; }
  std::string name() const { return fs::path(file).stem().string(); }
};

void PrintTo(const HostileCase& c, std::ostream* os) { *os << c.file; }

// Parses `// hostile: k=v k="quoted v" ...` from the first line.
HostileCase ParseCase(const std::string& file, const std::string& text) {
  HostileCase c;
  c.file = file;
  const std::string tag = "// hostile:";
  std::string line = text.substr(0, text.find('\n'));
  if (line.rfind(tag, 0) != 0) {
    c.parse_error = "the first line must start with '" + tag + "'";
    return c;
  }
  size_t i = tag.size();
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i >= line.size()) break;
    size_t eq = line.find('=', i);
    if (eq == std::string::npos) {
      c.parse_error = "expected key=value at column " + std::to_string(i + 1);
      return c;
    }
    std::string key = line.substr(i, eq - i);
    std::string value;
    i = eq + 1;
    if (i < line.size() && line[i] == '"') {
      size_t end = line.find('"', i + 1);
      if (end == std::string::npos) {
        c.parse_error = "unterminated quoted value of " + key;
        return c;
      }
      value = line.substr(i + 1, end - i - 1);
      i = end + 1;
    } else {
      size_t end = line.find(' ', i);
      if (end == std::string::npos) end = line.size();
      value = line.substr(i, end - i);
      i = end;
    }
    c.keys[key] = value;
  }
  return c;
}

std::vector<HostileCase> LoadCorpus() {
  std::vector<HostileCase> cases;
  for (const auto& e : fs::directory_iterator(kCorpusDir)) {
    if (e.path().extension() != ".cu") continue;
    cases.push_back(ParseCase(e.path().filename().string(), ReadCase(e.path().string())));
  }
  std::sort(cases.begin(), cases.end(),
            [](const HostileCase& a, const HostileCase& b) { return a.file < b.file; });
  return cases;
}

// The candidate as the evaluator gets it: the file, plus what the header asks to append.
std::string CaseSource(const HostileCase& c) {
  std::string src = ReadCase(kCorpusDir + "/" + c.file);
  if (std::string pad = c.Get("pad"); !pad.empty()) {
    src += "/*" + std::string(std::stoul(pad), 'x') + "*/\n";
  }
  if (c.Get("inject") == "nul") {
    static constexpr char kNul[] = "// a NUL: \0 and more code after it\n";
    src += std::string(kNul, sizeof(kNul) - 1);
  }
  if (c.Get("inject") == "latin1") src += "// caf\xe9 in Latin-1\n";
  return src;
}

const std::vector<std::string> kVerdicts = {"ok",      "compile_error", "plan_error",
                                            "crashed", "timeout",       "wrong_answer",
                                            "suspicious", "not_run",    "rejected"};

ProblemSpec* Spec() {
  static ProblemSpec* spec = [] {
    auto s = LoadProblem(std::string(WS_SOURCE_DIR) + "/problems/mxfp8_quantize_rowwise/spec.json");
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? new ProblemSpec(std::move(*s)) : nullptr;
  }();
  return spec;
}

std::string Workspace() {
  static std::string ws = testing::TempDir() + "/ws_hostile_" + std::to_string(::getpid());
  return ws;
}

// This process's own scratch root (on the tmpfs where there is one), so the soak's census counts
// only its evaluations' folders even when another session shares the host.
std::string ScratchRoot() {
  static std::string root =
      (fs::is_directory("/dev/shm") ? std::string("/dev/shm") : testing::TempDir()) +
      "/ws_hostile_scratch_" + std::to_string(::getpid());
  return root;
}

// The workspace and the scratch root go when the tests end (a kept scratch would be a leak the
// soak reports first).
class RemoveFolders : public testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(Workspace(), ec);
    fs::remove_all(ScratchRoot(), ec);
  }
};
testing::Environment* const kRemoveFolders = testing::AddGlobalTestEnvironment(new RemoveFolders);

EvaluatorOptions Options(const HostileCase& c) {
  EvaluatorOptions opts;
  opts.workspace = Workspace();
  opts.scratch_root = ScratchRoot();
  opts.runner = std::string(WS_BINARY_DIR) + "/ws_runner";
  opts.compile_worker = std::string(WS_BINARY_DIR) + "/ws_compile";
  if (auto t = c.Get("compile_timeout"); !t.empty()) opts.compile_timeout_s = std::stod(t);
  if (auto t = c.Get("case_timeout"); !t.empty()) {
    opts.case_timeout_s = std::stod(t);
    opts.startup_timeout_s = 15;
  }
  return opts;
}

EvalRequest Request(const HostileCase& c, const std::string& source) {
  EvalRequest req;
  req.spec = Spec();
  req.source = source;
  req.source_name = c.file;
  req.arch = Arch::kSm90a;
  req.params = {{"rounding", "rceil"}};
  req.time_bench = c.Get("timing") == "yes";
  return req;
}

void ExpectVerdict(const HostileCase& c, const EvalResult& r) {
  const std::string got(VerdictName(r.verdict));
  const std::string want = c.Get("expect");
  if (want == "rejected") {
    EXPECT_TRUE(got != "ok" && got != "not_run") << c.file << ": got " << got << ": " << r.message;
  } else {
    EXPECT_EQ(got, want) << c.file << " (" << c.Get("what") << "): " << r.message;
  }
  if (auto m = c.Get("message"); !m.empty()) {
    EXPECT_NE(r.message.find(m), std::string::npos)
        << c.file << ": the message lacks \"" << m << "\": " << r.message;
  }
  if (auto l = c.Get("log"); !l.empty()) {
    EXPECT_NE(r.compile.log.find(l), std::string::npos)
        << c.file << ": the compile log lacks \"" << l << "\": " << r.compile.log.substr(0, 500);
  }
}

// ---- The corpus itself ---------------------------------------------------------------------------

#if !WS_HOSTILE_GPU
TEST(HostileCorpusTest, EveryCaseStatesItsAttackAndVerdictAndIsInTheReadme) {
  auto cases = LoadCorpus();
  EXPECT_GE(cases.size(), 30u);
  const std::string readme = ReadText(kCorpusDir + "/README.md");
  int gpu = 0;
  for (const auto& c : cases) {
    EXPECT_TRUE(c.parse_error.empty()) << c.file << ": " << c.parse_error;
    EXPECT_NE(std::find(kVerdicts.begin(), kVerdicts.end(), c.Get("expect")), kVerdicts.end())
        << c.file << ": expect=" << c.Get("expect");
    EXPECT_TRUE(c.Get("gpu") == "yes" || c.Get("gpu") == "no") << c.file;
    EXPECT_FALSE(c.Get("what").empty()) << c.file;
    EXPECT_NE(readme.find(c.name()), std::string::npos) << c.file << " is not in README.md";
    gpu += c.gpu();
  }
  EXPECT_GE(gpu, 20);
}

// No false rejections: what the project ships, and legal constructs that look like attacks.
// The GPU cases only mean something if they compile: a case rejected at compile time would pass
// for the wrong reason on the GPU. Checked here, without a GPU, for both architectures.
TEST(HostileCorpusTest, GpuCasesCompile) {
  int checked = 0;
  for (const HostileCase& c : LoadCorpus()) {
    if (!c.gpu()) continue;
    for (Arch arch : {Arch::kSm90a, Arch::kSm100a}) {
      EvalRequest req = Request(c, CaseSource(c));
      req.arch = arch;
      req.compile_only = true;
      auto r = Evaluate(req, Options(c));
      ASSERT_TRUE(r.ok()) << c.file << ": " << r.status().message();
      EXPECT_EQ(r->verdict, Verdict::kNotRun) << c.file << " " << ArchName(arch) << ": "
                                              << r->message;
    }
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

TEST(SourceCheckTest, ShippedKernelsPass) {
  std::vector<std::string> files;
  for (const char* dir : {"/kernels", "/problems"}) {
    for (const auto& e : fs::recursive_directory_iterator(std::string(WS_SOURCE_DIR) + dir)) {
      if (e.path().extension() == ".cu") files.push_back(e.path().string());
    }
  }
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    Status s = CheckCandidateSource(ReadText(f), {});
    EXPECT_TRUE(s.ok()) << f << ": " << s.message();
  }
}

TEST(SourceCheckTest, LegalConstructsThatLookLikeAttacksPass) {
  const char* kLegal[] = {
      "#include <cuda_bf16.h>\n#include \"cuda_fp8.h\"\n#include <cuda/ptx>\n",
      "// #include \"/etc/passwd\" in a comment\n/* #include </etc/passwd> */\n",
      "__host__ __device__ inline int f(int a) { return a; }\n",
      "template <int N> __device__ __host__ constexpr int g() { return N; }\n",
      "#define HD __host__ __device__\nHD int h() { return 1; }\n",
      "extern \"C\" {\n__global__ void k1() {}\n}\n",
      "extern \"C\" __global__ void __launch_bounds__(256) k2(int* p) { *p = 1'000'000; }\n",
      "extern \"C\" __device__ int helper(int a) { return a; }\n",
      "extern \"C\" __launch_bounds__(128, 2) __global__ void k3() {}\n",
      "__device__ void s() { asm volatile(R\"(ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];)\" ::); }\n",
      "__device__ const char* m = \"main() and .include and <<< are only text\";\n",
      "__device__ void p() { cudaGridDependencySynchronize(); "
      "cudaTriggerProgrammaticLaunchCompletion(); }\n",
      "#pragma unroll 4\n#pragma nv_diag_suppress 177\n_Pragma(\"unroll\")\n",
      "#if 0\n#error not taken\n#endif\n#ifdef X\n#elif defined(Y)\n#else\n#endif\n",
      "__device__ int domain_main_value() { int main_count = 0; return main_count; }\n",
      "__device__ bool lt(int a, int b) { return a << 1 < b; }\n",
  };
  const std::vector<std::string> dirs = {std::string(WS_CUDA_INCLUDE_DIR),
                                         std::string(WS_CUDA_INCLUDE_DIR) + "/cccl"};
  for (const char* src : kLegal) {
    Status s = CheckCandidateSource(src, dirs);
    EXPECT_TRUE(s.ok()) << src << "\n-> " << s.message();
  }
}

TEST(SourceCheckTest, RejectionsNameTheLineAndTheRule) {
  Status s = CheckCandidateSource("// ok\n\n__host__ void f() {}\n", {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("line 3"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(kDeviceCodeOnlyRule), std::string::npos) << s.message();
  s = CheckCandidateSource("#define X 1\n# /* c */ include \\\n  \"/etc/passwd\"\n", {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("line 2"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("absolute"), std::string::npos) << s.message();
}
#endif

// ---- Evaluating every case ---------------------------------------------------------------------

class HostileTest : public testing::TestWithParam<HostileCase> {
 protected:
  void SetUp() override {
    ASSERT_NE(Spec(), nullptr);
#if WS_HOSTILE_GPU
    std::string why;
    auto device = ProbeDevice(Options(GetParam()), &why);
    ASSERT_TRUE(device.ok()) << device.status().message();
    if (!*device) GTEST_SKIP() << "no GPU here (" << why << "); GPU tests skipped";
    device_ = **device;
#endif
  }

  std::optional<DeviceInfo> device_;
};

TEST_P(HostileTest, GetsItsVerdict) {
  const HostileCase& c = GetParam();
  EvalRequest req = Request(c, CaseSource(c));
  req.compile_only = !WS_HOSTILE_GPU;
  req.device = device_;
  auto r = Evaluate(req, Options(c));
  ASSERT_TRUE(r.ok()) << c.file << ": the evaluator itself failed: " << r.status().message();
  ExpectVerdict(c, *r);
#if WS_HOSTILE_GPU
  // After a crash, a hang or a refused launch, the evaluator still judges an honest kernel.
  const std::string want = c.Get("expect");
  if (want == "crashed" || want == "timeout" || want == "rejected") {
    HostileCase control = ParseCase("g01_control_ok.cu", ReadCase(kCorpusDir + "/g01_control_ok.cu"));
    EvalRequest next = Request(control, CaseSource(control));
    next.device = device_;
    auto r2 = Evaluate(next, Options(control));
    ASSERT_TRUE(r2.ok()) << r2.status().message();
    EXPECT_EQ(r2->verdict, Verdict::kOk) << "after " << c.file << ": " << r2->message;
  }
#endif
}

std::vector<HostileCase> Selected() {
  std::vector<HostileCase> out;
  for (auto& c : LoadCorpus()) {
    if (c.gpu() == static_cast<bool>(WS_HOSTILE_GPU)) out.push_back(c);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Corpus, HostileTest, testing::ValuesIn(Selected()),
                         [](const testing::TestParamInfo<HostileCase>& info) {
                           return info.param.name();
                         });

#if WS_HOSTILE_GPU
// ---- The soak ------------------------------------------------------------------------------------
// WS_HOSTILE_SOAK=N evaluates N hostile GPU cases in a row (cycling through the corpus, every
// verdict checked), then an honest kernel, and checks that nothing leaked: file descriptors of this
// process, runner or compiler processes, scratch files, GPU memory. Off unless asked: it takes
// many minutes.

int CountEntries(const std::string& dir) {
  std::error_code ec;
  int n = 0;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it); it.increment(ec)) {
    ++n;
  }
  return n;
}

// The parent of process `pid` (0 when it is gone).
long ParentOf(long pid) {
  const std::string stat = ReadText("/proc/" + std::to_string(pid) + "/stat");
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so parse after the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(stat.substr(close + 1));
  std::string state;
  long ppid = 0;
  in >> state >> ppid;
  return ppid;
}

// Worker processes of this test that should not outlive an evaluation: descendants of this
// process, or (orphaned) ones whose command line names its workspace or scratch root. Another
// session's workers on the same host are not counted.
int CountWorkerProcesses() {
  const long self = ::getpid();
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmd = ReadText("/proc/" + pid + "/cmdline");
    bool worker = false;
    for (const char* name : {"ws_runner", "ws_compile", "compute-sanitizer", "bwrap"}) {
      worker |= cmd.find(name) != std::string::npos;
    }
    if (!worker) continue;
    // With the '/', another process's /tmp/ws_hostile_123 is not ours when we are 12.
    bool ours = cmd.find(Workspace() + "/") != std::string::npos ||
                cmd.find(ScratchRoot() + "/") != std::string::npos;
    for (long p = std::stol(pid), hops = 0; !ours && p > 1 && hops < 64; ++hops) {
      p = ParentOf(p);
      ours = p == self;
    }
    n += ours;
  }
  return n;
}

// GPU memory in use on the GPUs the soak runs on (ordinals as "0,1"; empty: the first GPU).
int64_t GpuMemoryUsedMiB(const std::string& gpus) {
  std::string cmd = "nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits";
  cmd += gpus.empty() ? " -i 0" : " -i " + gpus;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[64] = {};
  int64_t total = 0;
  bool got = false;
  while (std::fgets(buf, sizeof(buf), p) != nullptr) {
    total += std::strtoll(buf, nullptr, 10);
    got = true;
  }
  ::pclose(p);
  return got ? total : -1;
}

// The GPU ordinals WS_HOSTILE_SOAK_GPUS names ("0,1"), else CUDA_VISIBLE_DEVICES's when it is a
// plain list of ordinals, else none (the default GPU).
std::vector<std::string> SoakGpus() {
  const char* env = std::getenv("WS_HOSTILE_SOAK_GPUS");
  if (env == nullptr) env = std::getenv("CUDA_VISIBLE_DEVICES");
  std::vector<std::string> out;
  std::stringstream in(env ? env : "");
  for (std::string g; std::getline(in, g, ',');) {
    if (g.empty() || g.find_first_not_of("0123456789") != std::string::npos) return {};
    out.push_back(g);
  }
  return out;
}

struct Census {
  int fds, workers, scratch;
  int64_t gpu_mib;
};

Census Take(const std::string& gpus) {
  return {CountEntries("/proc/self/fd"), CountWorkerProcesses(),
          CountEntries(Workspace() + "/scratch") + CountEntries(ScratchRoot()),
          GpuMemoryUsedMiB(gpus)};
}

class HostileSoakTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(Spec(), nullptr);
    HostileCase control = ParseCase("g01_control_ok.cu", ReadCase(kCorpusDir + "/g01_control_ok.cu"));
    std::string why;
    auto device = ProbeDevice(Options(control), &why);
    ASSERT_TRUE(device.ok()) << device.status().message();
    if (!*device) GTEST_SKIP() << "no GPU here (" << why << "); GPU tests skipped";
    device_ = **device;
  }

  std::optional<DeviceInfo> device_;
};

TEST_F(HostileSoakTest, LeavesNothingBehind) {
  const char* env = std::getenv("WS_HOSTILE_SOAK");
  if (env == nullptr) GTEST_SKIP() << "set WS_HOSTILE_SOAK=N to run N hostile evaluations in a row";
  const int n = std::atoi(env);
  std::vector<HostileCase> cases = Selected();
  ASSERT_FALSE(cases.empty());
  HostileCase control = ParseCase("g01_control_ok.cu", ReadCase(kCorpusDir + "/g01_control_ok.cu"));
  const std::string tuned = ReadText(std::string(WS_SOURCE_DIR) +
                                     "/kernels/mxfp8_quantize_rowwise/kernel.cu");
  auto time_tuned = [&]() -> double {
    EvalRequest req = Request(control, tuned);
    req.device = device_;
    req.time_bench = true;
    auto r = Evaluate(req, Options(control));
    EXPECT_TRUE(r.ok() && r->verdict == Verdict::kOk) << (r.ok() ? r->message : r.status().message());
    return r.ok() ? r->geomean_us : 0;
  };
  const double before_us = time_tuned();
  // The hostile evaluations run at the problem's smallest bench shape: what they leave behind does
  // not depend on the size, the corpus tests cover every bench shape, and GPU work is exclusive
  // per GPU (evaluator/gpu_lock.h), so the large shapes' GPU time would add up over 500
  // evaluations. The honest kernel above and below is timed at every bench shape.
  ProblemSpec soak_spec = *Spec();
  ASSERT_FALSE(soak_spec.bench_shapes.empty());
  soak_spec.bench_shapes = {*std::min_element(
      soak_spec.bench_shapes.begin(), soak_spec.bench_shapes.end(), [](const Shape& a, const Shape& b) {
        return a.symbols.at("M") * a.symbols.at("K") < b.symbols.at("M") * b.symbols.at("K");
      })};
  const std::vector<std::string> gpus = SoakGpus();
  std::string gpu_list;
  for (const auto& g : gpus) gpu_list += (gpu_list.empty() ? "" : ",") + g;
  const Census before = Take(gpu_list);
  // WS_HOSTILE_SOAK_JOBS=J runs J evaluations at a time, thread t on GPU gpus[t % n] (several
  // threads share a GPU, as a campaign's compile-and-check traffic would); evaluation i goes to
  // thread i % J.
  const char* jobs_env = std::getenv("WS_HOSTILE_SOAK_JOBS");
  const int jobs = std::max(1, jobs_env ? std::atoi(jobs_env) : 1);
  std::map<std::string, int> verdicts;
  std::mutex mu;
  int errors = 0, done = 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, double> phases;  // summed over the evaluations: where the time went
  auto phase_text = [&]() {
    std::string s;
    for (const char* k : {"total", "compile", "reference_run", "candidate_run", "check",
                          "runner_startup", "gpu_wait", "runner_case_setup", "runner_case_check_run",
                          "runner_case_dump", "runner_case_timing", "runner_case_rehash",
                          "runner_case_total"}) {
      s += std::string(" ") + k + " " + std::to_string(static_cast<int>(phases[k])) + " s;";
    }
    return s;
  };
  auto worker = [&](int t) {
    for (int i = t; i < n; i += jobs) {
      const HostileCase& c = cases[i % cases.size()];
      EvalRequest req = Request(c, CaseSource(c));
      req.spec = &soak_spec;
      req.device = device_;
      // The soak is about robustness: only the cases caught by timed runs (timing=yes) are timed.
      EvaluatorOptions opts = Options(c);
      if (!gpus.empty()) {
        // The absolute ordinal: the runner sees CUDA_VISIBLE_DEVICES of its own.
        opts.visible_devices = gpus[t % gpus.size()];
      }
      auto r = Evaluate(req, opts);
      std::lock_guard<std::mutex> lock(mu);
      if (r.ok()) {
        for (const auto& [k, v] : r->phase_seconds) phases[k] += v;
      }
      if (++done % 50 == 0) {  // progress, for a soak cut short by its caller's time limit
        std::printf("soak: %d of %d evaluations after %.0f s; summed:%s\n", done, n,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                    phase_text().c_str());
        std::fflush(stdout);
      }
      if (!r.ok()) {
        ADD_FAILURE() << "evaluation " << i << " (" << c.file << "): " << r.status().message();
        ++errors;
        continue;
      }
      ++verdicts[std::string(VerdictName(r->verdict))];
      ExpectVerdict(c, *r);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < jobs; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  ASSERT_EQ(errors, 0);
  const Census after = Take(gpu_list);
  const double after_us = time_tuned();
  std::printf("soak: %d hostile evaluations, %d at a time on GPU(s) %s;", n, jobs,
              gpu_list.empty() ? "default" : gpu_list.c_str());
  for (const auto& [v, k] : verdicts) std::printf(" %s %d", v.c_str(), k);
  std::printf("\nsoak: in %.0f s; summed over the evaluations:%s",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
              phase_text().c_str());
  std::printf("\nsoak: before: fds %d, worker processes %d, scratch entries %d, GPU memory %lld MiB\n",
              before.fds, before.workers, before.scratch, static_cast<long long>(before.gpu_mib));
  std::printf("soak: after:  fds %d, worker processes %d, scratch entries %d, GPU memory %lld MiB\n",
              after.fds, after.workers, after.scratch, static_cast<long long>(after.gpu_mib));
  std::printf("soak: hand-tuned kernel geomean %.2f us before, %.2f us after\n", before_us, after_us);
  EXPECT_EQ(after.fds, before.fds);
  EXPECT_EQ(after.workers, 0);
  EXPECT_EQ(after.scratch, before.scratch);
  EXPECT_LE(after.gpu_mib, before.gpu_mib + 64) << "GPU memory grew";
  EXPECT_LT(after_us, before_us * 1.05) << "the good kernel got slower after the soak";
}
#endif

}  // namespace
}  // namespace ws
