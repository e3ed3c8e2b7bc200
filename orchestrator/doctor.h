// `warpsmith doctor`: what this machine gives the evaluator. Every sandbox layer is tried for real
// (a child under that layer attempts what the layer must stop), then NVRTC, the GPU and the
// workspace are reported.
#pragma once

#include <string>

namespace ws {

/// Runs the checks and prints them (a table, or JSON with `as_json`). Returns the process exit
/// status: 0 when every layer the default configuration (WARPSMITH_SANDBOX) needs is available
/// and works, 1 otherwise.
int RunDoctor(const std::string& workspace, bool as_json);

}  // namespace ws
