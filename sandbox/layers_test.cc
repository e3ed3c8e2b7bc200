// The sandbox's layers, each tried against what it must stop, with ws_sandbox_probe as the child.
// A layer this machine lacks makes its tests skip with the reason; nothing here needs a GPU.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sandbox/sandbox.h"

namespace ws {
namespace {

namespace fs = std::filesystem;

const std::string kProbe = std::string(WS_BINARY_DIR) + "/ws_sandbox_probe";

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ws_layers_test.XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = ::getenv(name))
      old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// Runs the probe with `ops` under `policy`; returns op -> outcome ("ok", "EPERM", ...).
std::map<std::string, std::string> Probe(const SandboxPolicy& policy,
                                         const std::vector<std::string>& ops,
                                         SandboxResult* out = nullptr) {
  SandboxSpec spec;
  spec.argv = {kProbe};
  spec.argv.insert(spec.argv.end(), ops.begin(), ops.end());
  spec.limits.wall_seconds = 20;
  spec.policy = policy;
  auto r = RunSandboxed(spec);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok())
    return {};
  EXPECT_EQ(r->exit_code, 0) << r->Describe() << " " << r->stderr_data;
  std::map<std::string, std::string> outcome;
  std::istringstream in(r->stdout_data);
  std::string line;
  while (std::getline(in, line)) {
    size_t sp = line.rfind(' ');
    if (line.rfind("env ", 0) == 0)
      outcome["env:" + line.substr(4, line.find('=') - 4)] = line.substr(line.find('=') + 1);
    else if (sp != std::string::npos)
      outcome[line.substr(0, sp)] = line.substr(sp + 1);
  }
  if (out)
    *out = *r;
  return outcome;
}

// Why namespaces cannot be had here, or "" when bwrap works.
std::string NamespacesMissing() {
  SandboxSpec spec;
  spec.argv = {"/usr/bin/true"};
  spec.policy.namespaces = true;
  auto r = RunSandboxed(spec);
  return r.ok() ? "" : r.status().message();
}

#define WS_REQUIRE_NAMESPACES()                                               \
  do {                                                                        \
    std::string why = NamespacesMissing();                                    \
    if (!why.empty())                                                         \
      GTEST_SKIP() << "namespace layer unavailable on this machine: " << why; \
  } while (0)

SandboxPolicy Namespaces(const std::string& scratch) {
  SandboxPolicy p;
  p.namespaces = true;
  p.scratch_dir = scratch;
  return p;
}

// A TCP listener on 127.0.0.1 in this process; its port.
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::listen(fd_, 8);
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~Listener() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(SandboxLayersTest, PlainPolicyReportsEveryLayer) {
  SandboxResult r;
  Probe(SandboxPolicy{}, {"uid"}, &r);
  EXPECT_EQ(r.layers["mode"], "custom");
  EXPECT_EQ(r.layers["namespaces"], "off");
  EXPECT_EQ(r.layers["seccomp"], "off");
  EXPECT_EQ(r.layers["cgroup"], "off");
  EXPECT_EQ(r.layers["env"], "off: inherited");
  EXPECT_EQ(r.layers["rlimits"].rfind("on: core 0", 0), 0u) << r.layers["rlimits"];
  EXPECT_EQ(r.layers["watchdog"].rfind("on: 20 s", 0), 0u) << r.layers["watchdog"];
}

TEST(SandboxLayersTest, SeccompDeniesInetSocketsPtraceAndNamespaces) {
  SandboxPolicy plain;
  auto before = Probe(plain, {"socket-inet"});
  EXPECT_EQ(before["socket-inet"], "ok");  // the control: this machine allows it

  SandboxPolicy p;
  p.seccomp = true;
  SandboxResult r;
  auto got = Probe(p, {"socket-inet", "socket-unix", "ptrace", "unshare-user"}, &r);
  EXPECT_EQ(got["socket-inet"], "EPERM");
  EXPECT_EQ(got["socket-unix"], "ok");
  EXPECT_EQ(got["ptrace"], "EPERM");
  EXPECT_EQ(got["unshare-user"], "EPERM");
  EXPECT_EQ(r.layers["seccomp"].rfind("on:", 0), 0u) << r.layers["seccomp"];
}

TEST(SandboxLayersTest, EnvironmentIsClearedToTheAllowlist) {
  ScopedEnv secret("WS_LAYERS_TEST_SECRET", "hunter2");
  SandboxPolicy p;
  p.clear_env = true;
  SandboxSpec spec;
  SandboxResult r;
  TempDir scratch;
  p.scratch_dir = scratch.path();
  auto got = Probe(p, {"env"}, &r);
  EXPECT_EQ(got.count("env:WS_LAYERS_TEST_SECRET"), 0u);
  EXPECT_EQ(got["env:PATH"], "/usr/local/bin:/usr/bin:/bin");
  EXPECT_EQ(got["env:HOME"], scratch.path());
  EXPECT_EQ(got["env:TMPDIR"], scratch.path());
  for (const auto& [k, v] : got) {
    if (k.rfind("env:", 0) != 0)
      continue;
    std::string name = k.substr(4);
    EXPECT_TRUE(name == "PATH" || name == "HOME" || name == "TMPDIR" || name == "LANG" ||
                name == "LD_LIBRARY_PATH" || name.rfind("CUDA_", 0) == 0 ||
                (kSandboxAsanBuild && name == "ASAN_OPTIONS"))
        << "unexpected variable " << name;
  }
  EXPECT_EQ(r.layers["env"].rfind("on: allowlist", 0), 0u) << r.layers["env"];
}

TEST(SandboxLayersTest, EnvSetReachesAClearedEnvironment) {
  SandboxSpec spec;
  spec.argv = {kProbe, "env"};
  spec.policy.clear_env = true;
  spec.env_set["CUDA_VISIBLE_DEVICES"] = "3";
  auto r = RunSandboxed(spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NE(r->stdout_data.find("env CUDA_VISIBLE_DEVICES=3\n"), std::string::npos);
}

TEST(SandboxLayersTest, NamespacesCutTheNetwork) {
  WS_REQUIRE_NAMESPACES();
  Listener listener;
  const std::string op = "connect:" + std::to_string(listener.port());
  auto outside = Probe(SandboxPolicy{}, {op});
  EXPECT_EQ(outside[op], "ok");  // the control
  TempDir scratch;
  SandboxResult r;
  auto inside = Probe(Namespaces(scratch.path()), {op}, &r);
  EXPECT_NE(inside[op], "ok");
  EXPECT_FALSE(inside[op].empty());
  EXPECT_EQ(r.layers["namespaces"].rfind("on:", 0), 0u) << r.layers["namespaces"];
}

TEST(SandboxLayersTest, NamespacesAllowWritesOnlyToScratch) {
  WS_REQUIRE_NAMESPACES();
  TempDir scratch, outside;
  const std::string elsewhere = outside.path() + "/escaped";
  auto got = Probe(Namespaces(scratch.path()),
                   {"write:" + scratch.path() + "/ok", "write:/usr/ws_layers_test",
                    "write:" + elsewhere, "write:/ws_layers_test"});
  EXPECT_EQ(got["write:" + scratch.path() + "/ok"], "ok");
  EXPECT_NE(got["write:/usr/ws_layers_test"], "ok");
  EXPECT_NE(got["write:" + elsewhere], "ok");
  EXPECT_NE(got["write:/ws_layers_test"], "ok");
  EXPECT_FALSE(fs::exists(elsewhere));
  EXPECT_FALSE(fs::exists("/usr/ws_layers_test"));

  // What the child writes into scratch is there afterwards; its /tmp is its own.
  SandboxSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo kept > kept.txt && echo gone > /tmp/ws_layers_private"};
  spec.policy = Namespaces(scratch.path());
  auto r = RunSandboxed(spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0) << r->stderr_data;
  std::ifstream kept(scratch.path() + "/kept.txt");
  std::string text;
  kept >> text;
  EXPECT_EQ(text, "kept");
  EXPECT_FALSE(fs::exists("/tmp/ws_layers_private"));
}

// The evaluator puts scratch on the host's tmpfs (/dev/shm) when it can: the sandbox's /dev is
// its own, yet the scratch folder inside it is bound read-write at the same path, and nothing
// else of the host's /dev/shm is visible.
TEST(SandboxLayersTest, ScratchOnTheHostTmpfsIsBoundWritable) {
  WS_REQUIRE_NAMESPACES();
  if (!fs::is_directory("/dev/shm") || ::access("/dev/shm", W_OK) != 0) {
    GTEST_SKIP() << "no writable /dev/shm here";
  }
  std::string tmpl = "/dev/shm/ws_layers_test.XXXXXX", other_tmpl = tmpl;
  const std::string scratch = ::mkdtemp(tmpl.data());
  const std::string other = ::mkdtemp(other_tmpl.data());
  std::ofstream(other + "/secret") << "host";
  auto got = Probe(Namespaces(scratch), {"write:" + scratch + "/ok", "exists:" + other + "/secret",
                                         "write:" + other + "/escaped"});
  EXPECT_EQ(got["write:" + scratch + "/ok"], "ok");
  EXPECT_EQ(got["exists:" + other + "/secret"], "ENOENT");
  EXPECT_NE(got["write:" + other + "/escaped"], "ok");
  EXPECT_FALSE(fs::exists(other + "/escaped"));

  SandboxSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo kept > kept.txt"};
  spec.policy = Namespaces(scratch);
  auto r = RunSandboxed(spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0) << r->stderr_data;
  std::ifstream kept(scratch + "/kept.txt");
  std::string text;
  kept >> text;
  EXPECT_EQ(text, "kept");
  fs::remove_all(scratch);
  fs::remove_all(other);
}

TEST(SandboxLayersTest, NamespacesHideHomeAndTheRepository) {
  WS_REQUIRE_NAMESPACES();
  TempDir scratch;
  const std::string repo_file = std::string(WS_SOURCE_DIR) + "/sandbox/sandbox.cc";
  ASSERT_TRUE(fs::exists(repo_file));
  auto got = Probe(Namespaces(scratch.path()),
                   {"exists:/home", "exists:/root", "read:/etc/passwd", "exists:" + repo_file,
                    "exists:" + std::string(WS_SOURCE_DIR) + "/.git", "exists:/usr/bin/sh",
                    "read:" + kProbe, "uid"});
  EXPECT_EQ(got["exists:/home"], "ENOENT");
  EXPECT_EQ(got["exists:/root"], "ENOENT");
  EXPECT_EQ(got["read:/etc/passwd"], "ENOENT");
  EXPECT_EQ(got["exists:" + repo_file], "ENOENT");
  EXPECT_EQ(got["exists:" + std::string(WS_SOURCE_DIR) + "/.git"], "ENOENT");
  EXPECT_EQ(got["exists:/usr/bin/sh"], "ok");  // the read-only system is there
  EXPECT_EQ(got["read:" + kProbe], "ok");      // and the program itself
  EXPECT_EQ(got["uid"], "65534");
}

TEST(SandboxLayersTest, ReadOnlyPathsAreReadableNotWritable) {
  WS_REQUIRE_NAMESPACES();
  TempDir scratch, data;
  const std::string file = data.path() + "/input.bin";
  std::ofstream(file) << "x";
  SandboxPolicy p = Namespaces(scratch.path());
  p.read_only_paths = {file};
  auto got = Probe(p, {"read:" + file, "write:" + file, "write:" + data.path() + "/new"});
  EXPECT_EQ(got["read:" + file], "ok");
  EXPECT_NE(got["write:" + file], "ok");
  EXPECT_FALSE(fs::exists(data.path() + "/new"));  // the child's /tmp is its own

  p.read_only_paths = {data.path() + "/missing"};
  SandboxSpec spec;
  spec.argv = {kProbe};
  spec.policy = p;
  auto r = RunSandboxed(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not exist"), std::string::npos);
}

TEST(SandboxLayersTest, WorkingDirDefaultsToScratch) {
  WS_REQUIRE_NAMESPACES();
  TempDir scratch;
  SandboxSpec spec;
  spec.argv = {"/bin/pwd"};
  spec.policy = Namespaces(scratch.path());
  auto r = RunSandboxed(spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stdout_data, scratch.path() + "\n");
}

TEST(SandboxLayersTest, TimeoutKillsTheWholeSandbox) {
  WS_REQUIRE_NAMESPACES();
  TempDir scratch;
  SandboxSpec spec;
  spec.argv = {"/bin/sh", "-c", "sleep 100 & sleep 100"};
  spec.policy = Namespaces(scratch.path());
  spec.limits.wall_seconds = 0.5;
  auto r = RunSandboxed(spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(r->wall_seconds, 5);
}

TEST(SandboxLayersTest, SignalInsideTheSandboxIsNamed) {
  WS_REQUIRE_NAMESPACES();
  TempDir scratch;
  SandboxSpec spec;
  spec.argv = {"/bin/sh", "-c", "kill -SEGV $$"};
  spec.policy = Namespaces(scratch.path());
  auto r = RunSandboxed(spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NE(r->Describe().find("SEGV"), std::string::npos) << r->Describe();
}

TEST(SandboxLayersTest, GpuPolicyWithoutDevicesStillRuns) {
  WS_REQUIRE_NAMESPACES();
  TempDir scratch;
  SandboxPolicy p = Namespaces(scratch.path());
  p.gpu = true;
  SandboxResult r;
  auto got = Probe(p, {"exists:/sys/devices", "exists:/dev/null"}, &r);
  EXPECT_EQ(got["exists:/sys/devices"], "ok");
  EXPECT_EQ(got["exists:/dev/null"], "ok");
  EXPECT_EQ(r.layers["gpu"].rfind("on:", 0), 0u) << r.layers["gpu"];
  if (!fs::exists("/dev/nvidiactl")) {
    EXPECT_NE(r.layers["gpu"].find("no NVIDIA device nodes"), std::string::npos);
  }
}

TEST(SandboxLayersTest, ConfinedPolicyStacksEveryLayer) {
  WS_REQUIRE_NAMESPACES();
  TempDir scratch;
  SandboxPolicy p = ConfinedPolicy(SandboxMode::kStrict);
  p.scratch_dir = scratch.path();
  SandboxResult r;
  auto got =
      Probe(p, {"socket-inet", "ptrace", "write:" + scratch.path() + "/x", "exists:/home"}, &r);
  EXPECT_EQ(got["socket-inet"], "EPERM");
  EXPECT_EQ(got["ptrace"], "EPERM");
  EXPECT_EQ(got["write:" + scratch.path() + "/x"], "ok");
  EXPECT_EQ(got["exists:/home"], "ENOENT");
  EXPECT_EQ(r.layers["mode"], "strict");
  EXPECT_EQ(r.layers["namespaces"].rfind("on:", 0), 0u) << r.layers["namespaces"];
  EXPECT_EQ(r.layers["seccomp"].rfind("on:", 0), 0u) << r.layers["seccomp"];
  const std::string& cg = r.layers["cgroup"];
  EXPECT_TRUE(cg.rfind("on:", 0) == 0 || cg.rfind("degraded:", 0) == 0) << cg;
}

TEST(SandboxLayersTest, MissingLayerFailsUnlessAllowedToDegrade) {
  ScopedEnv no_bwrap("WARPSMITH_BWRAP", "/nonexistent/bwrap");
  SandboxSpec spec;
  spec.argv = {kProbe, "uid"};
  spec.policy.namespaces = true;
  auto r = RunSandboxed(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'namespaces'"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("bwrap not found"), std::string::npos);

  spec.policy.allow_degraded = {kLayerNamespaces};
  r = RunSandboxed(spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->layers["namespaces"].rfind("degraded: bwrap not found", 0), 0u)
      << r->layers["namespaces"];
}

TEST(SandboxLayersTest, ModesDecideWhatMayDegrade) {
  SandboxPolicy strict = ConfinedPolicy(SandboxMode::kStrict);
  EXPECT_TRUE(strict.namespaces && strict.seccomp && strict.cgroup && strict.clear_env);
  EXPECT_EQ(strict.allow_degraded, std::set<std::string>{kLayerCgroup});
  SandboxPolicy degraded = ConfinedPolicy(SandboxMode::kDegraded);
  EXPECT_TRUE(degraded.namespaces && degraded.seccomp && degraded.cgroup);
  EXPECT_EQ(degraded.allow_degraded.size(), 3u);
  SandboxPolicy off = ConfinedPolicy(SandboxMode::kOff);
  EXPECT_FALSE(off.namespaces || off.seccomp || off.cgroup);
  EXPECT_NE(off.mode.find("off"), std::string::npos);

  {
    ScopedEnv e("WARPSMITH_SANDBOX", "off");
    auto p = DefaultSandboxPolicy();
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->mode, "off (WARPSMITH_SANDBOX=off)");
  }
  {
    ScopedEnv e("WARPSMITH_SANDBOX", "sloppy");
    EXPECT_FALSE(DefaultSandboxPolicy().ok());
  }
  // Under "off" every evaluation says so.
  SandboxResult r;
  Probe(off, {"uid"}, &r);
  EXPECT_EQ(r.layers["mode"], "off (WARPSMITH_SANDBOX=off)");
  EXPECT_EQ(r.layers["namespaces"], "off");
}

TEST(SandboxLayersTest, CgroupHoldsTheChildAndItsLimits) {
  SandboxSpec spec;
  spec.argv = {"/bin/sh", "-c", "cat /proc/self/cgroup"};
  spec.policy.cgroup = true;
  spec.limits.cgroup_pids = 32;
  spec.limits.cgroup_memory_bytes = int64_t{256} << 20;
  auto r = RunSandboxed(spec);
  if (!r.ok()) {
    GTEST_SKIP() << "cgroup layer unavailable on this machine: " << r.status().message();
  }
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_NE(r->stdout_data.find("warpsmith-"), std::string::npos) << r->stdout_data;
  EXPECT_EQ(r->layers["cgroup"].rfind("on:", 0), 0u) << r->layers["cgroup"];
  EXPECT_NE(r->layers["cgroup"].find("pids 32"), std::string::npos) << r->layers["cgroup"];

  // Over the memory limit: killed, and the report says why.
  spec.argv = {"/bin/sh", "-c", "x=$(head -c 400000000 /dev/zero | tr '\\0' a); echo ${#x}"};
  spec.limits.cgroup_memory_bytes = int64_t{64} << 20;
  spec.limits.wall_seconds = 30;
  r = RunSandboxed(spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->oom_killed) << r->Describe() << " " << r->stdout_data;
  EXPECT_NE(r->exit_code, 0);
}

}  // namespace
}  // namespace ws
