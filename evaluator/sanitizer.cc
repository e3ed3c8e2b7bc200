// compute-sanitizer: finding it, wrapping a runner in it, reading its reports.
#include "evaluator/sanitizer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>

namespace ws {

namespace fs = std::filesystem;

std::string_view SanitizerToolName(SanitizerTool t) {
  switch (t) {
    case SanitizerTool::kMemcheck: return "memcheck";
    case SanitizerTool::kRacecheck: return "racecheck";
    case SanitizerTool::kInitcheck: return "initcheck";
  }
  return "unknown";
}

namespace {

bool IsExecutableFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

Result<std::string> Canonical(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::canonical(p, ec);
  if (ec) return Status::Error("compute-sanitizer at {}: {}", p.string(), ec.message());
  return c.string();
}

}  // namespace

Result<std::string> FindComputeSanitizer() {
  if (const char* env = std::getenv("WARPSMITH_COMPUTE_SANITIZER"); env && *env) {
    if (!IsExecutableFile(env)) {
      return Status::Error("WARPSMITH_COMPUTE_SANITIZER={} is not an executable file", env);
    }
    return Canonical(env);
  }
  std::vector<fs::path> tried;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string dir; std::getline(ss, dir, ':');) {
      if (!dir.empty()) tried.push_back(fs::path(dir) / "compute-sanitizer");
    }
  }
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) {
    tried.push_back(fs::path(home) / "bin" / "compute-sanitizer");
  }
  tried.push_back("/usr/local/cuda/bin/compute-sanitizer");
  for (const auto& p : tried) {
    if (IsExecutableFile(p)) return Canonical(p);
  }
  return Status::Error(
      "compute-sanitizer not found (looked on PATH, in $CUDA_HOME/bin and /usr/local/cuda/bin; "
      "set WARPSMITH_COMPUTE_SANITIZER to its path)");
}

std::vector<std::string> SanitizerReadOnlyPaths(const std::string& sanitizer) {
  fs::path dir = fs::path(sanitizer).parent_path();
  const std::string d = dir.string();
  if (d == "/usr" || d.rfind("/usr/", 0) == 0) return {};
  return {d};
}

std::vector<std::pair<std::string, std::string>> SanitizerEnv() {
  return {{"NV_COMPUTE_SANITIZER_LOCAL_CONNECTION_OVERRIDE", "uds"}};
}

std::vector<std::string> SanitizerArgv(const std::string& sanitizer, SanitizerTool tool,
                                       const std::vector<std::string>& kernels,
                                       const std::vector<std::string>& runner_argv) {
  std::vector<std::string> argv = {
      sanitizer,
      "--tool", std::string(SanitizerToolName(tool)),
      "--error-exitcode", std::to_string(kSanitizerErrorExit),
      "--print-limit", "20",
      // Wait for the runner however long its start takes (module loads under instrumentation).
      "--launch-timeout", "0",
      "--target-processes", "application-only",
      // The runner's exit status is read from its result file, not counted as a finding.
      "--check-exit-code", "no",
      "--show-backtrace", "no",
  };
  std::vector<std::string> tool_opts;
  bool filter = true;
  switch (tool) {
    case SanitizerTool::kMemcheck:
      // The runner's own API calls fail on purpose at times (probing a kernel's parameters until
      // the driver says there are no more); a candidate has no host code to make API errors.
      tool_opts = {"--check-device-heap", "yes", "--report-api-errors", "no"};
      break;
    case SanitizerTool::kRacecheck:
      tool_opts = {"--racecheck-report", "analysis", "--racecheck-detect-level", "warn"};
      break;
    case SanitizerTool::kInitcheck:
      // initcheck tracks global memory (the outputs and workspace it can attribute); the
      // address-space option of older releases is gone in CUDA 13's sanitizer.
      tool_opts = {"--check-api-memory-access", "yes"};
      filter = false;  // the helpers' writes must be seen; findings are attributed instead
      break;
  }
  argv.insert(argv.end(), tool_opts.begin(), tool_opts.end());
  if (filter) {
    std::set<std::string> seen;
    for (const auto& k : kernels) {
      if (!seen.insert(k).second) continue;
      argv.push_back("--kernel-name");
      argv.push_back("kne=" + k);
    }
  }
  argv.push_back("--");
  argv.insert(argv.end(), runner_argv.begin(), runner_argv.end());
  return argv;
}

std::string SanitizerOutcome::Text() const {
  switch (state) {
    case State::kClean: return "clean";
    case State::kUnavailable: return "unavailable: " + why;
    case State::kFindings:
      if (count <= 0) return fmt::format("findings (exit status {})", kSanitizerErrorExit);
      return fmt::format("{} {}", count,
                         count == 1 ? unit.substr(0, unit.size() - 1) : unit);  // "1 error"
  }
  return "unknown";
}

std::string SanitizerOutcome::Message(SanitizerTool tool) const {
  std::string m = fmt::format("{}: {}", SanitizerToolName(tool), Text());
  std::string lines;
  for (const auto& f : findings) lines += (lines.empty() ? "" : "; ") + f;
  if (!lines.empty()) m += ": " + lines;
  if (m.size() > 1000) m = m.substr(0, 997) + "...";
  return m;
}

namespace {

std::string Trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// One report: its first line and the indented lines under it.
struct Report {
  std::string header;
  std::vector<std::string> body;
};

// The lines compute-sanitizer prints itself start with its prefix ("========="); the runner's own
// output in between does not.
bool SanitizerLine(const std::string& line, std::string* rest) {
  size_t n = 0;
  while (n < line.size() && line[n] == '=') ++n;
  if (n < 3) return false;
  *rest = line.substr(n);
  if (!rest->empty() && (*rest)[0] == ' ') rest->erase(0, 1);  // the separator after the prefix
  return true;
}

bool IsBookkeeping(const std::string& header) {
  static const char* kSkip[] = {"COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY",
                                "LEAK SUMMARY", "Saved host backtrace", "Warning: Detected overflow"};
  for (const char* s : kSkip) {
    if (header.rfind(s, 0) == 0) return true;
  }
  return false;
}

// The kernel a report is about: the first "at NAME" naming a function (not an address space).
// A demangled device function ("at void ws::mx::F<(int)4>::run(...)+0x40") gives its return
// type's word: only the runner's extern "C" kernel names matter below, and none looks like that.
std::string ReportKernel(const Report& r) {
  static const std::regex kAt(R"((?:^|\s)at\s+([A-Za-z_$][A-Za-z0-9_$]*))");
  std::vector<const std::string*> lines = {&r.header};
  for (const auto& b : r.body) lines.push_back(&b);
  for (const std::string* l : lines) {
    for (std::sregex_iterator it(l->begin(), l->end(), kAt), end; it != end; ++it) {
      std::string name = (*it)[1];
      if (name == "__shared__" || name == "__global__" || name == "__local__") continue;
      return name;
    }
  }
  return "";
}

// The runner's own kernels (evaluator/runner/runner_kernels.cu) are extern "C" ws_* functions.
// Every other function a report names is the candidate's: its kernels, and what they inline
// (its helpers, in any namespace, and the device library's ws:: code).
bool IsRunnerKernel(const std::string& name) { return name.rfind("ws_", 0) == 0; }

std::string OneLine(const Report& r) {
  std::string s = r.header;
  for (const auto& b : r.body) {
    std::string t = Trim(b);
    if (t.rfind("at ", 0) == 0 || t.rfind("and ", 0) == 0) s += " " + t;
  }
  return s;
}

}  // namespace

SanitizerOutcome ParseSanitizerOutput(SanitizerTool tool, bool exited, int exit_code,
                                      const std::string& output,
                                      const std::set<std::string>& kernels) {
  static const std::regex kErrorSummary(R"(ERROR SUMMARY:\s*(\d+)\s+error)");
  static const std::regex kRaceSummary(R"(RACECHECK SUMMARY:\s*(\d+)\s+hazard)");
  SanitizerOutcome out;
  out.unit = tool == SanitizerTool::kRacecheck ? "hazards" : "errors";

  std::vector<Report> reports;
  std::vector<std::string> other;  // the runner's own lines, for an unavailable reason
  bool have_summary = false;
  int64_t errors = 0, hazards = -1;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    std::string rest;
    if (!SanitizerLine(line, &rest)) {
      if (!Trim(line).empty()) other.push_back(Trim(line));
      continue;
    }
    std::smatch m;
    if (std::regex_search(rest, m, kErrorSummary)) {
      have_summary = true;
      errors = std::max<int64_t>(errors, std::stoll(m[1]));
    }
    if (std::regex_search(rest, m, kRaceSummary)) {
      have_summary = true;
      hazards = std::stoll(m[1]);
    }
    if (Trim(rest).empty()) continue;
    if (rest[0] == ' ' || rest[0] == '\t') {
      if (!reports.empty()) reports.back().body.push_back(rest);
      continue;
    }
    if (IsBookkeeping(rest)) continue;
    reports.push_back({Trim(rest), {}});
  }

  const int64_t summary_count =
      tool == SanitizerTool::kRacecheck && hazards >= 0 ? std::max(hazards, errors) : errors;
  const bool findings =
      summary_count > 0 || (exited && exit_code == kSanitizerErrorExit);
  if (findings) {
    std::vector<const Report*> mine, foreign;
    for (const auto& r : reports) {
      // A report that names no kernel (an API call's) is the runner's under initcheck, which
      // checks every kernel and API call; memcheck and racecheck only instrument the plan's.
      const std::string k = ReportKernel(r);
      const bool theirs = kernels.empty() || kernels.count(k) > 0 ||
                          (k.empty() ? tool != SanitizerTool::kInitcheck : !IsRunnerKernel(k));
      (theirs ? mine : foreign).push_back(&r);
    }
    if (mine.empty() && !foreign.empty()) {
      out.state = SanitizerOutcome::State::kUnavailable;
      out.why = fmt::format("{} flagged the evaluator's own code, not the candidate's: {}",
                            SanitizerToolName(tool), OneLine(*foreign.front()));
      return out;
    }
    out.state = SanitizerOutcome::State::kFindings;
    out.count = foreign.empty() ? summary_count : static_cast<int64_t>(mine.size());
    for (const Report* r : mine) {
      if (out.findings.size() == 3) break;
      out.findings.push_back(OneLine(*r));
    }
    return out;
  }

  auto reason = [&]() {
    std::string why;
    for (const auto& r : reports) {
      if (why.size() > 400) break;
      why += (why.empty() ? "" : "; ") + OneLine(r);
    }
    if (why.empty()) {
      for (size_t i = other.size() > 3 ? other.size() - 3 : 0; i < other.size(); ++i) {
        why += (why.empty() ? "" : "; ") + other[i];
      }
    }
    return why.empty() ? std::string("no output") : why.substr(0, 600);
  };
  out.state = SanitizerOutcome::State::kUnavailable;
  if (!exited) {
    out.why = fmt::format("{} was killed by a signal ({})", SanitizerToolName(tool), reason());
  } else if (!have_summary) {
    out.why = fmt::format("{} gave no error summary (exit status {}): {}", SanitizerToolName(tool),
                          exit_code, reason());
  } else if (exit_code != 0) {
    out.why = fmt::format("the runner failed under {} (exit status {}): {}",
                          SanitizerToolName(tool), exit_code, reason());
  } else {
    out.state = SanitizerOutcome::State::kClean;
  }
  return out;
}

}  // namespace ws
