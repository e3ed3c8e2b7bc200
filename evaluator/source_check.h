// The compile step's source check: what a candidate's text may contain before NVRTC sees it.
// Internal to the evaluator (compile.cc and ws_compile both run it); not part of evaluator.h.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ws {

/// A candidate larger than this is rejected before anything else looks at it.
inline constexpr size_t kMaxSourceBytes = size_t{1} << 20;

/// The rule every rejection for host code states.
inline constexpr std::string_view kDeviceCodeOnlyRule =
    "a candidate is device code only: __global__/__device__ functions, the plan comment, and "
    "#includes of CUDA headers and of the device library (ws/...)";

/// Checks a candidate's text. OK, or an error whose message names the line and the rule broken:
///  - at most kMaxSourceBytes, no NUL bytes, valid UTF-8;
///  - every #include names a header by a literal relative path, without `..`, that exists in one
///    of `include_dirs` (when it is empty, existence is not checked); no computed includes,
///    #include_next, #import, #embed, #line or linemarkers, __has_include, __has_embed;
///  - no `.incbin` in any string (inline assembly);
///  - no host code: no __host__ without __device__, no main(), no `extern "C"` declaration that
///    is not __global__/__device__, no device-side launches (`<<<`, cudaLaunch*, cudaMalloc, ...).
/// Comments (the plan among them) and string contents are not code. Directives inside `#if 0`
/// are checked too: the check is conservative, not a preprocessor.
Status CheckCandidateSource(std::string_view source, const std::vector<std::string>& include_dirs);

}  // namespace ws
