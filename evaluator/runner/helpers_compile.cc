#include "evaluator/runner/helpers_compile.h"

#include <string>

#include <nvrtc.h>

namespace ws::runner {

// Generated at build time from problems/init.h, digest.h and runner_kernels.cu (CMakeLists.txt).
extern const char kInitHeaderSource[];
extern const char kDigestHeaderSource[];
extern const char kRunnerKernelsSource[];

std::string HelperSource() {
  return std::string(kInitHeaderSource) + "\n" + kDigestHeaderSource + "\n" + kRunnerKernelsSource;
}

Result<std::vector<char>> CompileHelpers(int cc, std::string* log_out) {
  std::string source = HelperSource();
  nvrtcProgram prog;
  nvrtcResult nr = nvrtcCreateProgram(&prog, source.c_str(), "ws_runner_kernels.cu", 0, nullptr,
                                      nullptr);
  if (nr != NVRTC_SUCCESS) {
    return Status::Error("nvrtcCreateProgram: {}", nvrtcGetErrorString(nr));
  }
  std::string arch = fmt::format("--gpu-architecture=sm_{}", cc);
  // No FMA contraction: the generator must match the host's rounding bit for bit (init.h also
  // uses explicitly rounded intrinsics; this is belt and braces).
  const char* opts[] = {arch.c_str(), "-std=c++17", "--fmad=false"};
  nr = nvrtcCompileProgram(prog, 3, opts);
  std::string log;
  size_t log_size = 0;
  if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    nvrtcGetProgramLog(prog, log.data());
    log.resize(log_size - 1);
  }
  if (nr != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    return Status::Error("compiling the runner's kernels for {}: {}\n{}", arch,
                         nvrtcGetErrorString(nr), log);
  }
  size_t size = 0;
  std::vector<char> cubin;
  nr = nvrtcGetCUBINSize(prog, &size);
  if (nr == NVRTC_SUCCESS) {
    cubin.resize(size);
    nr = nvrtcGetCUBIN(prog, cubin.data());
  }
  nvrtcDestroyProgram(&prog);
  if (nr != NVRTC_SUCCESS) return Status::Error("nvrtcGetCUBIN: {}", nvrtcGetErrorString(nr));
  if (log_out) *log_out = log;
  return cubin;
}

}  // namespace ws::runner
