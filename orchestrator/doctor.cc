// `warpsmith doctor`: each sandbox layer is probed on its own by running ws_sandbox_probe (built
// beside this binary) under just that layer and checking that what it tried was stopped; then the
// default configuration is run as the compile worker and the runner get it.
#include "orchestrator/doctor.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <nvrtc.h>

#include "evaluator/evaluator.h"
#include "sandbox/sandbox.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct Check {
  Check(std::string n, bool req) : name(std::move(n)), required(req) {}
  std::string name;
  bool required = false;  // the default configuration cannot run without it
  bool passed = false;
  std::string state;   // the layer's state as RunSandboxed reported it
  std::string detail;  // what the probe saw, or why it could not run
};

// A TCP listener on 127.0.0.1, so the network probe has something to reach.
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0)
      return;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 && ::listen(fd_, 4) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port_ = ntohs(a.sin_port);
    }
  }
  ~Listener() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ws_doctor.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr)
      path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty())
      fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct ProbeRun {
  Result<SandboxResult> result = Status::Error("not run");
  std::map<std::string, std::string> outcome;  // op -> "ok", "EPERM", ...
};

ProbeRun RunProbe(const SandboxPolicy& policy, const std::vector<std::string>& ops) {
  SandboxSpec spec;
  spec.argv = {SelfDir() + "/ws_sandbox_probe"};
  spec.argv.insert(spec.argv.end(), ops.begin(), ops.end());
  spec.policy = policy;
  spec.limits.wall_seconds = 20;
  spec.limits.cgroup_memory_bytes = int64_t{256} << 20;
  spec.limits.cgroup_pids = 64;
  ProbeRun run;
  run.result = RunSandboxed(spec);
  if (!run.result.ok())
    return run;
  std::istringstream in(run.result->stdout_data);
  std::string line;
  while (std::getline(in, line)) {
    size_t sp = line.rfind(' ');
    if (sp != std::string::npos)
      run.outcome[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return run;
}

// Fills `c` from a probe run: the layer's state, and whether every expectation held.
void Judge(Check* c, const ProbeRun& run, const std::string& layer,
           const std::map<std::string, std::string>& expect_exact,
           const std::vector<std::string>& expect_refused) {
  if (!run.result.ok()) {
    c->state = "unavailable";
    c->detail = run.result.status().message();
    return;
  }
  auto it = run.result->layers.find(layer);
  c->state = it == run.result->layers.end() ? "" : it->second;
  std::string bad;
  for (const auto& [op, want] : expect_exact) {
    auto got = run.outcome.find(op);
    std::string g = got == run.outcome.end() ? "(no answer)" : got->second;
    if (g != want)
      bad += fmt::format("{}{} gave {}, expected {}", bad.empty() ? "" : "; ", op, g, want);
  }
  for (const auto& op : expect_refused) {
    auto got = run.outcome.find(op);
    if (got == run.outcome.end() || got->second == "ok")
      bad += fmt::format("{}{} was not refused", bad.empty() ? "" : "; ", op);
  }
  c->passed = bad.empty() && c->state.rfind("on", 0) == 0;
  c->detail = bad.empty() ? "stopped what it must stop" : bad;
}

}  // namespace

int RunDoctor(const std::string& workspace, bool as_json) {
  auto mode = SandboxModeFromEnv();
  const char* mode_env = std::getenv("WARPSMITH_SANDBOX");
  SandboxPolicy defaults = ConfinedPolicy(mode.ok() ? *mode : SandboxMode::kStrict);
  auto required = [&](const char* layer, bool requested) {
    return requested && defaults.allow_degraded.count(layer) == 0;
  };

  TempDir scratch;
  std::vector<Check> checks;
  const bool have_probe = fs::exists(SelfDir() + "/ws_sandbox_probe");

  if (have_probe && !scratch.path().empty()) {
    // Namespaces: no network, read-only system, nothing of the host but what is bound.
    {
      Check c{kLayerNamespaces, required(kLayerNamespaces, defaults.namespaces)};
      Listener listener;
      SandboxPolicy p;
      p.namespaces = true;
      p.scratch_dir = scratch.path();
      std::vector<std::string> ops = {"exists:/home", "write:/usr/.ws_doctor",
                                      "write:" + scratch.path() + "/ok"};
      std::vector<std::string> refused = {"write:/usr/.ws_doctor"};
      if (listener.port() > 0) {
        ops.push_back(fmt::format("connect:{}", listener.port()));
        refused.push_back(ops.back());
      }
      Judge(&c, RunProbe(p, ops), kLayerNamespaces,
            {{"exists:/home", "ENOENT"}, {"write:" + scratch.path() + "/ok", "ok"}}, refused);
      checks.push_back(c);
    }
    // seccomp: inet sockets and ptrace refused with EPERM, AF_UNIX still fine.
    {
      Check c{kLayerSeccomp, required(kLayerSeccomp, defaults.seccomp)};
      SandboxPolicy p;
      p.seccomp = true;
      Judge(&c, RunProbe(p, {"socket-inet", "ptrace", "unshare-user", "socket-unix"}),
            kLayerSeccomp,
            {{"socket-inet", "EPERM"},
             {"ptrace", "EPERM"},
             {"unshare-user", "EPERM"},
             {"socket-unix", "ok"}},
            {});
      checks.push_back(c);
    }
    // cgroup: one is made, the child runs in it, it is removed.
    {
      Check c{kLayerCgroup, required(kLayerCgroup, defaults.cgroup)};
      SandboxPolicy p;
      p.cgroup = true;
      Judge(&c, RunProbe(p, {"uid"}), kLayerCgroup, {}, {});
      checks.push_back(c);
    }
    // The environment allowlist.
    {
      Check c{"env", defaults.clear_env};
      SandboxPolicy p;
      p.clear_env = true;
      ProbeRun run = RunProbe(p, {"env"});
      Judge(&c, run, "env", {}, {});
      if (run.result.ok() && run.result->stdout_data.find("env WARPSMITH_") != std::string::npos) {
        c.passed = false;
        c.detail = "a WARPSMITH_ variable reached the child";
      }
      checks.push_back(c);
    }
  } else {
    Check c{"probe", true};
    c.detail = have_probe ? "cannot create a temporary folder"
                          : "ws_sandbox_probe is missing beside warpsmith; build it";
    checks.push_back(c);
  }

  // The watchdog: a child that sleeps past its limit is killed.
  {
    Check c{"watchdog", true};
    SandboxSpec spec;
    spec.argv = {"/bin/sh", "-c", "sleep 30"};
    spec.limits.wall_seconds = 0.3;
    auto r = RunSandboxed(spec);
    c.passed = r.ok() && r->timed_out && r->wall_seconds < 5;
    c.state = r.ok() ? r->layers["watchdog"] : "unavailable";
    c.detail = r.ok() ? (c.passed ? "killed a sleeping child at its limit" : r->Describe())
                      : r.status().message();
    checks.push_back(c);
  }

  // The default configuration, as the compile worker and the runner get it.
  json configs = json::object();
  bool configs_ok = mode.ok();
  for (bool gpu : {false, true}) {
    SandboxPolicy p = defaults;
    p.gpu = gpu;
    p.scratch_dir = scratch.path();
    SandboxSpec spec;
    spec.argv = {"/usr/bin/true"};
    spec.policy = p;
    spec.limits.wall_seconds = 20;
    auto r = RunSandboxed(spec);
    const char* name = gpu ? "runner" : "compile";
    if (r.ok() && r->exit_code == 0) {
      configs[name] = {{"ok", true}, {"layers", r->layers}};
    } else {
      configs_ok = false;
      configs[name] = {
          {"ok", false},
          {"error", r.ok() ? r->Describe() + " " + r->stderr_data : r.status().message()}};
    }
  }

  int nvrtc_major = 0, nvrtc_minor = 0;
  nvrtcVersion(&nvrtc_major, &nvrtc_minor);
  EvaluatorOptions opts;
  opts.workspace = workspace;
  std::string why_no_gpu;
  std::string gpu_text;
  auto device = ProbeDevice(opts, &why_no_gpu);
  if (!device.ok())
    gpu_text = "error: " + device.status().message();
  else if (*device)
    gpu_text =
        fmt::format("{} ({}, driver {})", (*device)->name, (*device)->arch, (*device)->driver);
  else
    gpu_text = "none: " + why_no_gpu;
  std::error_code ec;
  const std::string ws_abs = fs::absolute(workspace, ec).lexically_normal().string();
  const bool ws_exists = fs::is_directory(workspace);
  const std::string ws_text =
      ws_exists ? (::access(workspace.c_str(), W_OK) == 0 ? "writable" : "NOT writable")
                : "not created yet";

  bool all_ok = configs_ok;
  for (const auto& c : checks) {
    if (c.required && !c.passed)
      all_ok = false;
  }
  const std::string mode_text =
      mode.ok() ? defaults.mode + (mode_env == nullptr ? " (WARPSMITH_SANDBOX unset)" : "")
                : mode.status().message();

  if (as_json) {
    json layers = json::object();
    for (const auto& c : checks) {
      layers[c.name] = {
          {"required", c.required}, {"works", c.passed}, {"state", c.state}, {"detail", c.detail}};
    }
    json j = {{"ok", all_ok},
              {"sandbox_mode", mode_text},
              {"bwrap", FindBwrap()},
              {"layers", layers},
              {"default_configuration", configs},
              {"nvrtc", fmt::format("{}.{}", nvrtc_major, nvrtc_minor)},
              {"gpu", gpu_text},
              {"workspace", {{"path", ws_abs}, {"state", ws_text}}}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format("sandbox mode   {}\n", mode_text);
    std::cout << fmt::format("bwrap          {}\n",
                             FindBwrap().empty() ? "not found" : FindBwrap());
    for (const auto& c : checks) {
      std::string verdict = c.passed ? "works" : (c.required ? "MISSING" : "missing (allowed)");
      std::cout << fmt::format("{:<14} {:<18} {}\n", c.name, verdict, c.state);
      if (!c.passed || c.detail.find("stopped") == std::string::npos)
        std::cout << fmt::format("{:<14} {:<18} {}\n", "", "", c.detail);
    }
    for (const char* name : {"compile", "runner"}) {
      const json& cfg = configs[name];
      std::string what = cfg["ok"].get<bool>() ? "runs" : "FAILS: " + cfg.value("error", "");
      std::cout << fmt::format("{:<14} {}\n", std::string(name) + " sandbox", what);
      if (cfg["ok"].get<bool>() && cfg["layers"].contains("gpu"))
        std::cout << fmt::format("{:<14} gpu {}\n", "", cfg["layers"]["gpu"].get<std::string>());
    }
    std::cout << fmt::format("nvrtc          {}.{}\n", nvrtc_major, nvrtc_minor);
    std::cout << fmt::format("gpu            {}\n", gpu_text);
    std::cout << fmt::format("workspace      {} ({})\n", ws_abs, ws_text);
    std::cout << (all_ok ? "ok: every layer the default configuration needs is available\n"
                         : "NOT OK: a layer the default configuration needs is missing (see "
                           "docs/sandbox.md)\n");
  }
  return all_ok ? 0 : 1;
}

}  // namespace ws
