// NVRTC compilation of the runner's own device code. No driver calls, so it is tested without a
// GPU.
#pragma once

#include <cstddef>
#include <span>
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

/// CompileHelpers' output for one compute capability, made at build time (ws_prebuild_helpers).
struct PrebuiltHelpers {
  int cc;
  const unsigned char* cubin;
  size_t size;
};

/// The capabilities compiled at build time; ws_runner links the table (prebuilt_helpers.cc), the
/// runner finds its GPU's there and skips the NVRTC compile at start.
std::span<const PrebuiltHelpers> PrebuiltHelperTable();

}  // namespace ws::runner
