#include "sandbox/sandbox.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ws {
namespace {

SandboxSpec Shell(const std::string& script) {
  SandboxSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.limits.wall_seconds = 10;
  return spec;
}

SandboxResult RunOk(const SandboxSpec& spec) {
  Result<SandboxResult> r = RunSandboxed(spec);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : SandboxResult{};
}

// A fresh temporary directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ws_sandbox_test.XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

pid_t ReadPid(const std::string& file) {
  std::ifstream in(file);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

// Dead, or a zombie waiting for a reaper (PID 1 in a container may never reap it).
bool ProcessGone(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH)
    return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

// SIGKILL is delivered asynchronously; give the kernel a moment.
bool EventuallyGone(pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    if (ProcessGone(pid))
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(SandboxTest, ExitCodes) {
  struct Case {
    std::string script;
    int code;
  };
  for (const Case& c : std::vector<Case>{{"exit 0", 0}, {"exit 3", 3}, {"exit 255", 255}}) {
    SandboxResult r = RunOk(Shell(c.script));
    EXPECT_FALSE(r.signaled) << c.script;
    EXPECT_FALSE(r.timed_out) << c.script;
    EXPECT_EQ(r.exit_code, c.code) << c.script;
    EXPECT_EQ(r.Describe(), "exit " + std::to_string(c.code));
  }
}

TEST(SandboxTest, Signals) {
  SandboxResult r = RunOk(Shell("kill -SEGV $$"));
  EXPECT_TRUE(r.signaled);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.Describe(), "killed by signal 11 (SIGSEGV)");
}

TEST(SandboxTest, TimeoutKillsWholeGroup) {
  TempDir dir;
  const std::string pid_file = dir.path() + "/grandchild.pid";
  SandboxSpec spec = Shell("sleep 100 & echo $! > " + pid_file + "; sleep 100");
  spec.limits.wall_seconds = 0.5;
  auto t0 = std::chrono::steady_clock::now();
  SandboxResult r = RunOk(spec);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_TRUE(r.signaled);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_GE(r.wall_seconds, 0.5);
  EXPECT_LT(elapsed, 3.0);
  EXPECT_EQ(r.Describe().rfind("timed out after 0.", 0), 0u) << r.Describe();
  pid_t grandchild = ReadPid(pid_file);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(EventuallyGone(grandchild));
}

TEST(SandboxTest, GrandchildKilledAfterNormalExit) {
  TempDir dir;
  const std::string pid_file = dir.path() + "/grandchild.pid";
  // The grandchild keeps stdout open; the run must still end promptly.
  SandboxSpec spec = Shell("sleep 100 & echo $! > " + pid_file + "; exit 4");
  auto t0 = std::chrono::steady_clock::now();
  SandboxResult r = RunOk(spec);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(elapsed, 2.0);
  pid_t grandchild = ReadPid(pid_file);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(EventuallyGone(grandchild));
}

TEST(SandboxTest, OutputIsCappedAndDropsCounted) {
  SandboxSpec spec = Shell("head -c 100000 /dev/zero; head -c 50 /dev/zero >&2");
  spec.limits.output_cap_bytes = 1000;
  SandboxResult r = RunOk(spec);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data.size(), 1000u);
  EXPECT_EQ(r.stdout_dropped, 99000);
  EXPECT_EQ(r.stderr_data.size(), 50u);
  EXPECT_EQ(r.stderr_dropped, 0);
}

TEST(SandboxTest, StdinRoundTripsThroughCat) {
  SandboxSpec spec;
  spec.argv = {"cat"};  // found on PATH
  // Larger than a pipe buffer, so feeding and draining must interleave.
  for (int i = 0; i < 200000; ++i) spec.stdin_data += static_cast<char>('a' + i % 26);
  SandboxResult r = RunOk(spec);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data, spec.stdin_data);
}

TEST(SandboxTest, ChildThatIgnoresStdinDoesNotKillUs) {
  SandboxSpec spec = Shell("exec 0<&-; echo done");
  spec.stdin_data = std::string(1 << 20, 'x');
  SandboxResult r = RunOk(spec);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data, "done\n");
}

TEST(SandboxTest, RlimitsApplied) {
  SandboxSpec spec = Shell("ulimit -v; ulimit -n; ulimit -c");
  spec.limits.address_space_bytes = int64_t{1} << 30;
  spec.limits.open_files = 64;
  SandboxResult r = RunOk(spec);
  EXPECT_EQ(r.exit_code, 0);
  // An AddressSanitizer build leaves the address space unlimited (sandbox.h).
  EXPECT_EQ(r.stdout_data, kSandboxAsanBuild ? "unlimited\n64\n0\n" : "1048576\n64\n0\n");
}

TEST(SandboxTest, AddressSpaceLimitMakesBigAllocationFail) {
  if (kSandboxAsanBuild) GTEST_SKIP() << "an AddressSanitizer build sets no RLIMIT_AS (sandbox.h)";
  // dash holds a command substitution's output in memory: 40 MB cannot fit in 32 MiB.
  const std::string big = "x=$(head -c 40000000 /dev/zero | tr '\\0' a); echo ${#x}";
  SandboxSpec spec = Shell(big);
  spec.limits.address_space_bytes = int64_t{32} << 20;
  SandboxResult r = RunOk(spec);
  EXPECT_TRUE(r.signaled || r.exit_code != 0) << r.Describe();
  EXPECT_EQ(r.stdout_data, "");

  spec.limits.address_space_bytes = 0;
  r = RunOk(spec);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data, "40000000\n");
}

TEST(SandboxTest, MissingExecutableIsAnError) {
  SandboxSpec spec;
  spec.argv = {"/nonexistent/program"};
  Result<SandboxResult> r = RunSandboxed(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("No such file"), std::string::npos) << r.status().message();

  spec.argv = {"ws-no-such-program-anywhere"};
  r = RunSandboxed(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not found"), std::string::npos) << r.status().message();

  spec.argv = {};
  EXPECT_FALSE(RunSandboxed(spec).ok());
}

TEST(SandboxTest, BadWorkingDirIsAnError) {
  SandboxSpec spec = Shell("true");
  spec.working_dir = "/nonexistent/dir";
  Result<SandboxResult> r = RunSandboxed(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("chdir"), std::string::npos) << r.status().message();
}

TEST(SandboxTest, EnvAndWorkingDir) {
  TempDir dir;
  SandboxSpec spec = Shell("echo \"$WS_TEST_VAR\"; pwd");
  spec.env_set["WS_TEST_VAR"] = "hello world";
  spec.working_dir = dir.path();
  SandboxResult r = RunOk(spec);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data,
            "hello world\n" + std::filesystem::canonical(dir.path()).string() + "\n");
}

TEST(SandboxTest, ConcurrentRuns) {
  std::vector<std::thread> threads;
  std::vector<SandboxResult> results(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([i, &results] {
      SandboxSpec spec = Shell("read x; echo $((x * 2)); exit " + std::to_string(i));
      spec.stdin_data = std::to_string(i) + "\n";
      results[i] = RunOk(spec);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(results[i].exit_code, i);
    EXPECT_EQ(results[i].stdout_data, std::to_string(i * 2) + "\n");
  }
}

TEST(SandboxTest, SelfDir) {
  std::string dir = SelfDir();
  ASSERT_FALSE(dir.empty());
  EXPECT_EQ(dir.front(), '/');
  EXPECT_TRUE(std::filesystem::exists(dir + "/sandbox_test"));
}

}  // namespace
}  // namespace ws
