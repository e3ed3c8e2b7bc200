// NVRTC compilation of the runner's own device code. No driver calls, so it is tested without a
// GPU.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace ws::runner {

/// The text NVRTC compiles: problems/init.h, digest.h, then runner_kernels.cu (embedded at build
/// time).
std::string HelperSource();

/// Compiles HelperSource() to a cubin for compute capability `cc` (90 -> sm_90). NVRTC's log
/// (warnings) goes to `log` when given.
Result<std::vector<char>> CompileHelpers(int cc, std::string* log = nullptr);

}  // namespace ws::runner
