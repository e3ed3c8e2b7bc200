// The Slurm executor against a real one-node Slurm cluster on loopback, started here as the
// current user (munged, slurmctld, slurmd from the Debian packages; its own slurm.conf in a temp
// folder; stopped by PID afterwards). A compile-only campaign runs through the Slurm executor;
// one job is cancelled with scancel while it runs; the campaign still finishes with every
// evaluation counted once. Skips, saying why, where the packages are missing or the daemons
// cannot start.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "orchestrator/store.h"
#include "sandbox/sandbox.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string Find(const std::string& name) {
  for (const char* dir : {"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"}) {
    std::string p = std::string(dir) + "/" + name;
    if (::access(p.c_str(), X_OK) == 0)
      return p;
  }
  return "";
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

struct CmdResult {
  int exit_code = -1;
  std::string out, err;
};

CmdResult Command(std::vector<std::string> argv, double seconds = 30) {
  SandboxSpec spec;
  spec.argv = std::move(argv);
  spec.limits.wall_seconds = seconds;
  auto r = RunSandboxed(spec);
  if (!r.ok())
    return {-1, "", r.status().message()};
  return {r->signaled ? -1 : r->exit_code, r->stdout_data, r->stderr_data};
}

// A daemon's start: it forks into the background and the command returns.
int RunDaemon(const std::vector<std::string>& args) {
  pid_t pid = ::fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    int fd = ::open("/dev/null", O_RDWR);
    ::dup2(fd, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

pid_t ReadPid(const fs::path& file) {
  std::ifstream in(file);
  long pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}

void StopPid(pid_t pid) {
  if (pid <= 0 || ::kill(pid, SIGTERM) != 0)
    return;
  for (int i = 0; i < 100 && ::kill(pid, 0) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (::kill(pid, 0) == 0)
    ::kill(pid, SIGKILL);
}

class SlurmTest : public testing::Test {
 protected:
  void SetUp() override {
    for (const char* b :
         {"munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo"}) {
      bin_[b] = Find(b);
      if (bin_[b].empty()) {
        GTEST_SKIP() << "no " << b << ": the Slurm packages are not installed (scripts/setup.sh "
                     << "installs slurmctld slurmd slurm-client munge)";
      }
    }
    // Short: munge's socket path must fit a sockaddr_un.
    dir_ = fs::path("/tmp") / ("wsslurm." + std::to_string(::getpid()));
    fs::remove_all(dir_);
    for (const char* d : {"state", "spool", "log", "shared"}) fs::create_directories(dir_ / d);
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::replace);
    {
      std::random_device rd;
      std::string key(1024, '\0');
      for (auto& c : key) c = static_cast<char>(rd());
      ASSERT_TRUE(WriteFileAtomic((dir_ / "munge.key").string(), key).ok());
      fs::permissions(dir_ / "munge.key", fs::perms::owner_read | fs::perms::owner_write,
                      fs::perm_options::replace);
    }
    const std::string sock = (dir_ / "munge.sock").string();
    int m = RunDaemon({bin_["munged"], "--force", "--key-file", (dir_ / "munge.key").string(),
                       "--socket", sock, "--pid-file", (dir_ / "munged.pid").string(), "--log-file",
                       (dir_ / "log/munged.log").string(), "--seed-file",
                       (dir_ / "munged.seed").string()});
    munged_ = ReadPid(dir_ / "munged.pid");
    if (m != 0 || munged_ <= 0) {
      skip_ = "munged cannot start here; see " + (dir_ / "log/munged.log").string();
      return;
    }
    const int ctld_port = FreePort(), d_port = FreePort();
    const std::string d = dir_.string();
    // Two fake GPUs as GRES: character devices with /dev/null's numbers (needs CAP_MKNOD).
    fake_gpus_ = ::mknod((dir_ / "gpu0").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0 &&
                 ::mknod((dir_ / "gpu1").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0;
    if (fake_gpus_) {
      std::ofstream(dir_ / "gres.conf")
          << "AutoDetect=off\nNodeName=wsnode Name=gpu Type=fake File=" << d << "/gpu[0-1]\n";
    }
    std::ofstream(dir_ / "slurm.conf")
        << "ClusterName=wstest\n"
        << "SlurmctldHost=localhost(127.0.0.1)\n"
        << "SlurmctldPort=" << ctld_port << "\nSlurmdPort=" << d_port << "\n"
        << "SlurmUser=" << ::getpwuid(::getuid())->pw_name << "\n"
        << "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=" << sock << "\n"
        << "StateSaveLocation=" << d << "/state\nSlurmdSpoolDir=" << d << "/spool\n"
        << "SlurmctldPidFile=" << d << "/slurmctld.pid\nSlurmdPidFile=" << d << "/slurmd.pid\n"
        << "SlurmctldLogFile=" << d << "/log/slurmctld.log\n"
        << "SlurmdLogFile=" << d << "/log/slurmd.log\n"
        << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nMpiDefault=none\n"
        << "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
        << "ReturnToService=2\nAccountingStorageType=accounting_storage/none\n"
        << "JobCompType=jobcomp/none\nSchedulerType=sched/builtin\n"
        << "NodeName=wsnode NodeAddr=127.0.0.1 CPUs="
        << std::max(2u, std::thread::hardware_concurrency()) << " RealMemory=1000"
        << (fake_gpus_ ? " Gres=gpu:fake:2\n" : "\n") << (fake_gpus_ ? "GresTypes=gpu\n" : "")
        << "PartitionName=eval Nodes=wsnode Default=YES MaxTime=30 State=UP\n";
    ::setenv("SLURM_CONF", (dir_ / "slurm.conf").c_str(), 1);
    int ctld = RunDaemon({bin_["slurmctld"], "-i"});
    int slurmd = RunDaemon({bin_["slurmd"], "-N", "wsnode"});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ctld_ = ReadPid(dir_ / "slurmctld.pid");
    slurmd_ = ReadPid(dir_ / "slurmd.pid");
    if (ctld != 0 || slurmd != 0) {
      skip_ = "the Slurm daemons cannot start here; see " + d + "/log";
      return;
    }
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (Clock::now() < deadline) {
      CmdResult s = Command({bin_["sinfo"], "--noheader", "--format", "%T"});
      if (s.exit_code == 0 && s.out.find("idle") != std::string::npos)
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    skip_ = "the one-node cluster never became idle; see " + d + "/log";
  }

  void TearDown() override {
    if (dir_.empty())
      return;
    // Our jobs first (this cluster is ours alone), then the daemons, by PID.
    if (ctld_ > 0) {
      CmdResult q = Command({bin_["squeue"], "--noheader", "--format", "%A"});
      std::istringstream in(q.out);
      std::vector<std::string> ids = {bin_["scancel"]};
      for (std::string id; in >> id;) ids.push_back(id);
      if (ids.size() > 1)
        Command(ids);
    }
    StopPid(slurmd_);
    StopPid(ctld_);
    StopPid(munged_);
    ::unsetenv("SLURM_CONF");
    if (!HasFailure())
      fs::remove_all(dir_);
  }

  std::map<std::string, std::string> bin_;
  fs::path dir_;
  // `warpsmith campaign start ... --executor slurm` in the background, its output in `log`;
  // every job waits `delay` seconds before it evaluates.
  pid_t StartCampaign(const std::vector<std::string>& args, const std::string& delay,
                      const fs::path& log) {
    pid_t pid = ::fork();
    if (pid != 0)
      return pid;
    ::setenv("WARPSMITH_JOB_DELAY_S", delay.c_str(), 1);
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<std::string> all = {std::string(WS_BINARY_DIR) + "/warpsmith",
                                    "--workspace",
                                    (dir_ / "ws").string(),
                                    "--problems-dir",
                                    std::string(WS_SOURCE_DIR) + "/problems",
                                    "campaign",
                                    "start",
                                    "--executor",
                                    "slurm",
                                    "--slurm-partition",
                                    "eval",
                                    "--slurm-time",
                                    "5",
                                    "--slurm-shared-dir",
                                    (dir_ / "shared").string()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }

  // Waits up to `seconds` for the campaign; true when it exited 0.
  bool WaitCampaign(pid_t pid, int seconds) {
    int status = 0;
    pid_t done = 0;
    const auto end = Clock::now() + std::chrono::seconds(seconds);
    while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (done == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return false;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }

  pid_t munged_ = 0, ctld_ = 0, slurmd_ = 0;
  bool fake_gpus_ = false;
  std::string skip_;
};

TEST_F(SlurmTest, CompileOnlyCampaignSurvivesACancelledJob) {
  if (!skip_.empty())
    GTEST_SKIP() << skip_;
  const std::string ws = (dir_ / "ws").string();
  const std::string shared = (dir_ / "shared").string();
  // The campaign, in the background: 6 compile jobs as two arrays of three. Each job waits 8 s
  // before it evaluates, so one can be cancelled mid-way.
  pid_t campaign = ::fork();
  ASSERT_GE(campaign, 0);
  if (campaign == 0) {
    ::setenv("WARPSMITH_JOB_DELAY_S", "8", 1);
    int fd = ::open((dir_ / "campaign.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    const std::string bin = std::string(WS_BINARY_DIR) + "/warpsmith";
    const std::string problems = std::string(WS_SOURCE_DIR) + "/problems";
    ::execl(bin.c_str(), bin.c_str(), "--workspace", ws.c_str(), "--problems-dir", problems.c_str(),
            "campaign", "start", "--problems", "mxfp8_quantize_rowwise", "--compile-only",
            "--budget", "evaluations=6", "--tuner-batch", "3", "--executor", "slurm",
            "--slurm-partition", "eval", "--slurm-time", "5", "--slurm-shared-dir", shared.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }

  // Cancel the first job seen running, once it has run for 2 s: a cancel that reaches slurmd
  // while it is still launching the task can leave the task's process running to the end (seen:
  // killed 40 ms after allocation, its result written 8 s later), and a delivered result is
  // rightly counted, not retried.
  std::string cancelled, running;
  Clock::time_point running_since;
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (cancelled.empty() && Clock::now() < deadline) {
    CmdResult q = Command(
        {bin_["squeue"], "--noheader", "--array", "--name", "warpsmith", "--format", "%i|%T"});
    std::istringstream in(q.out);
    bool still = false;
    for (std::string line; std::getline(in, line);) {
      if (line.find("|RUNNING") == std::string::npos)
        continue;
      const std::string id = line.substr(0, line.find('|'));
      if (running.empty()) {
        running = id;
        running_since = Clock::now();
      }
      still = still || id == running;
    }
    if (!still) {
      running.clear();
    } else if (Clock::now() - running_since >= std::chrono::seconds(2)) {
      cancelled = running;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(cancelled.empty()) << "no job ran for 2 s";
  CmdResult sc = Command({bin_["scancel"], cancelled});
  EXPECT_EQ(sc.exit_code, 0) << sc.err;

  int status = 0;
  pid_t done = 0;
  const auto end = Clock::now() + std::chrono::seconds(150);
  while ((done = ::waitpid(campaign, &status, WNOHANG)) == 0 && Clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  if (done == 0) {
    ::kill(campaign, SIGKILL);
    ::waitpid(campaign, &status, 0);
  }
  Result<std::string> log_file = ReadFile((dir_ / "campaign.log").string());
  const std::string log = log_file.ok() ? *log_file : "";
  ASSERT_NE(done, 0) << "the campaign did not finish in time\n" << log;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log;

  auto store = Store::Open(ws + "/warpsmith.db");
  ASSERT_TRUE(store.ok()) << store.status().message();
  auto latest = (*store)->LatestCampaign();
  ASSERT_TRUE(latest.ok() && latest->has_value());
  const int64_t id = (*latest)->id;
  EXPECT_EQ((*latest)->status, "done") << (*latest)->message;
  auto evals = (*store)->CampaignEvaluations(id, "");
  ASSERT_TRUE(evals.ok());
  ASSERT_EQ(evals->size(), 6u) << log;
  std::set<std::string> job_ids, knobs;
  for (const auto& e : *evals) {
    EXPECT_EQ(e.verdict, "not_run") << e.message;
    EXPECT_EQ(e.node, "wsnode");
    job_ids.insert(e.job_id);
    knobs.insert(e.knobs_json);
  }
  EXPECT_EQ(job_ids.size(), 6u) << "every evaluation from its own job";
  EXPECT_EQ(knobs.size(), 6u);
  EXPECT_EQ((*store)->Spend(id)->evaluations, 6);

  auto jobs = (*store)->Jobs(id);
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 6u);
  int retried = 0;
  for (const auto& j : *jobs) {
    EXPECT_EQ(j.state, "done") << j.id << ": " << j.message;
    EXPECT_EQ(j.executor, "slurm");
    EXPECT_TRUE(j.evaluation_id.has_value()) << j.id;
    if (j.tries > 1)
      ++retried;
  }
  EXPECT_EQ(retried, 1) << "the cancelled job, and only it, was retried";

  // `campaign status` shows the jobs per node.
  CmdResult st =
      Command({std::string(WS_BINARY_DIR) + "/warpsmith", "--workspace", ws, "campaign", "status"});
  EXPECT_EQ(st.exit_code, 0) << st.err;
  EXPECT_NE(st.out.find("jobs per node (slurm executor)"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("wsnode"), std::string::npos) << st.out;
}

// GPU jobs ask for one GPU each (--gres=gpu:1): Slurm gives each its own fake GPU, the job
// reports the index it got, and the store records it. No real GPU here, so each GPU job's verdict
// is not_run (it still compiles, plans and probes on its node).
TEST_F(SlurmTest, GpuJobsHoldOneGpuEach) {
  if (!skip_.empty())
    GTEST_SKIP() << skip_;
  if (!fake_gpus_)
    GTEST_SKIP() << "no fake GPU devices: mknod needs CAP_MKNOD";
  const fs::path log = dir_ / "campaign.log";
  pid_t campaign = StartCampaign({"--problems", "mxfp8_quantize_rowwise", "--budget",
                                  "evaluations=4", "--tuner-batch", "4", "--arch", "sm_90a"},
                                 "2", log);
  ASSERT_GT(campaign, 0);
  const bool ok = WaitCampaign(campaign, 150);
  Result<std::string> log_file = ReadFile(log.string());
  const std::string text = log_file.ok() ? *log_file : "";
  ASSERT_TRUE(ok) << text;

  auto store = Store::Open((dir_ / "ws" / "warpsmith.db").string());
  ASSERT_TRUE(store.ok()) << store.status().message();
  auto latest = (*store)->LatestCampaign();
  ASSERT_TRUE(latest.ok() && latest->has_value());
  const int64_t id = (*latest)->id;
  auto evals = (*store)->CampaignEvaluations(id, "");
  ASSERT_TRUE(evals.ok());
  ASSERT_EQ(evals->size(), 4u) << text;
  std::set<int64_t> gpus;
  for (const auto& e : *evals) {
    EXPECT_EQ(e.verdict, "not_run") << e.message;
    EXPECT_NE(e.message.find("needs a GPU"), std::string::npos) << e.message;
    EXPECT_EQ(e.job_id.substr(e.job_id.size() - 4), "-gpu") << e.job_id;
    EXPECT_EQ(e.node, "wsnode");
    ASSERT_TRUE(e.gpu_index.has_value()) << e.job_id;
    gpus.insert(*e.gpu_index);
  }
  // Two GPU jobs ran at a time (2 CPUs, 2 GPUs, each waits 2 s): never on the same GPU.
  EXPECT_EQ(gpus, (std::set<int64_t>{0, 1}));
  auto jobs = (*store)->Jobs(id);
  ASSERT_TRUE(jobs.ok());
  int compile = 0, gpu = 0;
  for (const auto& j : *jobs) {
    compile += j.kind == "compile";
    gpu += j.kind == "gpu";
    EXPECT_EQ(j.state, "done") << j.id << ": " << j.message;
  }
  EXPECT_EQ(compile, 4);
  EXPECT_EQ(gpu, 4);
}

}  // namespace
}  // namespace ws
