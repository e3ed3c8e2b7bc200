// ws_compile: the compile worker. Reads a JSON request on stdin, compiles it with NVRTC and writes
// the cubin to request.out; prints {"ok": bool, "log": "..."} on stdout. Runs under the limits
// the orchestrator sets (sandbox/), so it trusts nothing in the source.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <nvrtc.h>

#include "evaluator/source_check.h"

using json = nlohmann::json;

namespace {

// The orchestrator caps our stdout; a log past this (a flood of diagnostics) is cut here, so the
// reply stays valid JSON.
constexpr size_t kMaxLogBytes = 256 * 1024;

int Reply(bool ok, std::string log) {
  if (log.size() > kMaxLogBytes) {
    log.resize(kMaxLogBytes);
    log += "\n[log truncated]";
  }
  // NVRTC echoes source lines; never fail on bytes that are not UTF-8.
  std::cout << json{{"ok", ok}, {"log", log}}.dump(-1, ' ', false, json::error_handler_t::replace)
            << std::endl;
  return 0;
}

}  // namespace

int main() {
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  json req = json::parse(input, nullptr, false);
  if (!req.is_object() || !req.contains("source") || !req.contains("out") || !req.contains("arch")) {
    std::fprintf(stderr, "ws_compile: malformed request\n");
    return 2;
  }
  std::string source, name, arch, out;
  std::vector<std::string> options, allowed_dirs;
  try {
    source = req["source"].get<std::string>();
    name = req.value("name", "candidate.cu");
    arch = req["arch"].get<std::string>();
    out = req["out"].get<std::string>();
    options.push_back("--gpu-architecture=" + arch);
    options.push_back("--std=c++17");
    // Unannotated functions are device functions: a candidate has no host code to run.
    options.push_back("-default-device");
    // The source has no directory; never search the worker's working directory for "headers".
    options.push_back("--no-source-include");
    options.push_back("-lineinfo");
    options.push_back("-Xptxas=-v");
    options.push_back("-DWS_NVRTC=1");
    // Named copies: items() over a temporary would dangle.
    const json defines = req.value("defines", json::object());
    const json include_dirs = req.value("include_dirs", json::array());
    for (auto& [k, v] : defines.items()) options.push_back("-D" + k + "=" + v.get<std::string>());
    for (const auto& d : include_dirs) {
      options.push_back("-I" + d.get<std::string>());
      allowed_dirs.push_back(d.get<std::string>());
    }
  } catch (const json::exception& e) {
    std::fprintf(stderr, "ws_compile: malformed request: %s\n", e.what());
    return 2;
  }
  // The orchestrator checks first; checking here too keeps the worker safe for any caller.
  if (ws::Status s = ws::CheckCandidateSource(source, allowed_dirs); !s.ok()) {
    return Reply(false, s.message());
  }

  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    return Reply(false, "nvrtcCreateProgram failed");
  }
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  nvrtcResult rc = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size) nvrtcGetProgramLog(prog, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  if (rc != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    return Reply(false, std::string(nvrtcGetErrorString(rc)) + "\n" + log);
  }
  size_t cubin_size = 0;
  if (nvrtcGetCUBINSize(prog, &cubin_size) != NVRTC_SUCCESS || cubin_size == 0) {
    nvrtcDestroyProgram(&prog);
    return Reply(false, "NVRTC produced no cubin (is the arch a real sm_ target?)\n" + log);
  }
  std::string cubin(cubin_size, '\0');
  nvrtcGetCUBIN(prog, cubin.data());
  nvrtcDestroyProgram(&prog);
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  f.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  if (!f) return Reply(false, "cannot write the cubin to " + out);
  return Reply(true, log);
}
