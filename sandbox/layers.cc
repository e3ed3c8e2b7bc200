// The sandbox's layers: the seccomp program (libseccomp, exported as BPF so the child can load it
// with two prctl calls, or bwrap with --seccomp), the cgroup, and the bubblewrap command line.
#include "sandbox/layers.h"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace ws::sandbox_internal {
namespace {

namespace fs = std::filesystem;

// Calls denied with EPERM. Names this architecture lacks are skipped.
constexpr const char* kDeniedCalls[] = {
    // debugging and reading other processes
    "ptrace", "process_vm_readv", "process_vm_writev",
    // mounts and namespaces (bwrap has set them up before the filter is loaded)
    "mount", "umount2", "pivot_root", "unshare", "setns", "fsopen", "fsconfig", "fsmount", "fspick",
    "move_mount", "open_tree", "mount_setattr",
    // kernel attack surface an evaluated program never needs
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "open_by_handle_at", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct",
    "quotactl", "syslog", "iopl", "ioperm", "settimeofday", "clock_settime", "lookup_dcookie",
    "fanotify_init"};

// clone() flags that make namespaces.
constexpr uint64_t kNamespaceFlags[] = {CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                                        CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET};

// personality() bits that weaken the address space (no ASLR, executable data, page 0).
constexpr uint64_t kPersonalityBits[] = {ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, MMAP_PAGE_ZERO,
                                         ADDR_COMPAT_LAYOUT};

struct SeccompCtx {
  scmp_filter_ctx ctx;
  ~SeccompCtx() {
    if (ctx != nullptr)
      seccomp_release(ctx);
  }
};

Result<std::vector<sock_filter>> BuildSeccomp() {
  // The kernel must offer filter mode (PR_GET_SECCOMP fails with EINVAL without CONFIG_SECCOMP).
  if (::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0)
    return Status::Error("the kernel has no seccomp ({})", strerror(errno));
  SeccompCtx c{seccomp_init(SCMP_ACT_ALLOW)};
  if (c.ctx == nullptr)
    return Status::Error("seccomp_init failed");
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  auto add = [&](uint32_t action, const char* name, unsigned count,
                 const scmp_arg_cmp* args) -> Status {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR)
      return Status::Ok();  // not on this architecture
    int rc = seccomp_rule_add_array(c.ctx, action, nr, count, args);
    if (rc != 0)
      return Status::Error("seccomp rule for {}: {}", name, strerror(-rc));
    return Status::Ok();
  };
  for (const char* name : kDeniedCalls) WS_RETURN_IF_ERROR(add(eperm, name, 0, nullptr));
  // Sockets: only AF_UNIX (no network even without the network namespace).
  scmp_arg_cmp not_unix = SCMP_A0(SCMP_CMP_NE, AF_UNIX);
  WS_RETURN_IF_ERROR(add(eperm, "socket", 1, &not_unix));
  for (uint64_t flag : kNamespaceFlags) {
    scmp_arg_cmp has_flag = SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag);
    WS_RETURN_IF_ERROR(add(eperm, "clone", 1, &has_flag));
  }
  // clone3 passes its flags in memory, out of a filter's reach; ENOSYS makes glibc use clone.
  WS_RETURN_IF_ERROR(add(SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, nullptr));
  // The bit set with bit 31 clear: personality(0xffffffff), the query, stays allowed.
  for (uint64_t bit : kPersonalityBits) {
    scmp_arg_cmp sets_bit = SCMP_A0(SCMP_CMP_MASKED_EQ, bit | 0x80000000u, bit);
    WS_RETURN_IF_ERROR(add(eperm, "personality", 1, &sets_bit));
  }

  // Export through a memfd and read the program back.
  int fd = ::memfd_create("ws-seccomp", MFD_CLOEXEC);
  if (fd < 0)
    return Status::Error("memfd_create: {}", strerror(errno));
  int rc = seccomp_export_bpf(c.ctx, fd);
  std::string bytes;
  if (rc == 0) {
    ::lseek(fd, 0, SEEK_SET);
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof(buf))) > 0) bytes.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (rc != 0)
    return Status::Error("seccomp_export_bpf: {}", strerror(-rc));
  if (bytes.empty() || bytes.size() % sizeof(sock_filter) != 0)
    return Status::Error("seccomp_export_bpf wrote {} bytes", bytes.size());
  std::vector<sock_filter> program(bytes.size() / sizeof(sock_filter));
  std::memcpy(program.data(), bytes.data(), bytes.size());
  return program;
}

// ---- small file helpers ----

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status WriteSmallFile(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::Error("open {}: {}", path, strerror(errno));
  ssize_t n = ::write(fd, text.data(), text.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size()))
    return Status::Error("write {} to {}: {}", text, path, strerror(err));
  return Status::Ok();
}

bool HasWord(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  std::string w;
  while (in >> w) {
    if (w == word)
      return true;
  }
  return false;
}

// Reads "<key> <n>" from a flat keyed file (memory.events, memory.oom_control).
int64_t KeyedValue(const std::string& path, const std::string& key) {
  std::istringstream in(ReadSmallFile(path));
  std::string k;
  int64_t v;
  while (in >> k >> v) {
    if (k == key)
      return v;
  }
  return 0;
}

std::string Bytes(int64_t b) {
  if (b % (int64_t{1} << 30) == 0)
    return fmt::format("{} GiB", b >> 30);
  return fmt::format("{} MiB", b >> 20);
}

// ---- cgroup discovery ----

struct CgroupLayout {
  std::string v2_mount;
  std::map<std::string, std::string> v1_mounts;    // controller -> mount point
  std::map<std::string, std::string> mount_roots;  // mount point -> root within the hierarchy
  std::string v2_path;                             // our cgroup in the v2 hierarchy
  std::map<std::string, std::string> v1_paths;     // controller -> our cgroup
};

CgroupLayout ReadCgroupLayout() {
  CgroupLayout l;
  std::istringstream mounts(ReadSmallFile("/proc/self/mountinfo"));
  std::string line;
  while (std::getline(mounts, line)) {
    // id parent maj:min root mountpoint options [optional...] - fstype source superoptions
    std::istringstream f(line);
    std::string id, parent, dev, root, point, tok;
    f >> id >> parent >> dev >> root >> point;
    while (f >> tok && tok != "-") {
    }
    std::string fstype, source, super;
    f >> fstype >> source >> super;
    if (fstype == "cgroup2") {
      l.v2_mount = point;
      l.mount_roots[point] = root;
    } else if (fstype == "cgroup") {
      std::istringstream opts(super);
      std::string opt;
      while (std::getline(opts, opt, ',')) {
        if (opt == "memory" || opt == "pids") {
          l.v1_mounts[opt] = point;
          l.mount_roots[point] = root;
        }
      }
    }
  }
  std::istringstream own(ReadSmallFile("/proc/self/cgroup"));
  while (std::getline(own, line)) {
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos)
      continue;
    std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.substr(0, a) == "0" && controllers.empty()) {
      l.v2_path = path;
      continue;
    }
    std::istringstream cs(controllers);
    std::string c;
    while (std::getline(cs, c, ',')) l.v1_paths[c] = path;
  }
  return l;
}

// Our cgroup's folder under a mount point.
std::string CgroupDir(const CgroupLayout& l, const std::string& mount, std::string path) {
  auto it = l.mount_roots.find(mount);
  if (it != l.mount_roots.end() && it->second != "/" && path.rfind(it->second, 0) == 0)
    path = path.substr(it->second.size());
  std::string dir = mount + path;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

std::string FreshCgroupName() {
  static std::atomic<uint64_t> counter{0};
  return fmt::format("warpsmith-{}-{}", ::getpid(), counter++);
}

std::vector<pid_t> CgroupPids(const std::string& dir) {
  std::vector<pid_t> pids;
  std::istringstream in(ReadSmallFile(dir + "/cgroup.procs"));
  pid_t p;
  while (in >> p) pids.push_back(p);
  return pids;
}

// ---- bubblewrap ----

bool IsExecutable(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Top-level entries the sandbox root gets from the host: /usr read-only, and /bin, /lib... as the
// same symlinks into it (merged /usr) or as read-only binds.
constexpr const char* kSystemRoots[] = {"/usr",   "/bin",   "/sbin",  "/lib",
                                        "/lib32", "/lib64", "/libx32"};

bool UnderSystemRoot(const std::string& path) {
  for (const char* root : kSystemRoots) {
    size_t n = std::strlen(root);
    if (path.compare(0, n, root) == 0 && (path.size() == n || path[n] == '/'))
      return true;
  }
  return false;
}

void AddSystemView(std::vector<std::string>* a) {
  for (const char* root : kSystemRoots) {
    struct stat st;
    if (::lstat(root, &st) != 0)
      continue;
    if (S_ISLNK(st.st_mode)) {
      std::error_code ec;
      fs::path target = fs::read_symlink(root, ec);
      if (!ec)
        a->insert(a->end(), {"--symlink", target.string(), root});
    } else if (S_ISDIR(st.st_mode)) {
      a->insert(a->end(), {"--ro-bind", root, root});
    }
  }
  for (const char* etc : {"/etc/ld.so.cache", "/etc/alternatives"})
    a->insert(a->end(), {"--ro-bind-try", etc, etc});
}

std::vector<std::string> BaseFlags(const BwrapInfo& b) {
  std::vector<std::string> a = {
      b.path,  "--unshare-all",     "--unshare-user", "--uid",      "65534", "--gid",
      "65534", "--die-with-parent", "--new-session",  "--cap-drop", "ALL"};
  if (b.disable_userns)
    a.push_back("--disable-userns");
  return a;
}

// Folders holding the NVIDIA driver's user-space libraries, from the ld cache; once per process.
const std::vector<std::string>& DriverLibraryDirs() {
  static const std::vector<std::string> dirs = [] {
    std::vector<std::string> out;
    std::string ldconfig;
    for (const char* p : {"/sbin/ldconfig", "/usr/sbin/ldconfig"}) {
      if (IsExecutable(p)) {
        ldconfig = p;
        break;
      }
    }
    if (ldconfig.empty())
      return out;
    SandboxSpec spec;
    spec.argv = {ldconfig, "-p"};
    spec.limits.wall_seconds = 10;
    auto r = RunSandboxed(spec);
    if (!r.ok())
      return out;
    std::istringstream in(r->stdout_data);
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("libcuda.so") == std::string::npos &&
          line.find("libnvidia-") == std::string::npos)
        continue;
      size_t arrow = line.find("=> ");
      if (arrow == std::string::npos)
        continue;
      std::string dir = fs::path(line.substr(arrow + 3)).parent_path().string();
      if (!dir.empty() && std::find(out.begin(), out.end(), dir) == out.end())
        out.push_back(dir);
    }
    return out;
  }();
  return dirs;
}

BwrapInfo ProbeBwrapAt(const std::string& path) {
  BwrapInfo info;
  info.path = path;
  SandboxSpec help;
  help.argv = {path, "--help"};
  help.limits.wall_seconds = 10;
  auto h = RunSandboxed(help);
  if (!h.ok()) {
    info.unavailable = fmt::format("{} does not start: {}", path, h.status().message());
    return info;
  }
  info.disable_userns = h->stdout_data.find("--disable-userns") != std::string::npos;
  info.tmpfs_size = h->stdout_data.find("--size") != std::string::npos;
  // A trivial program in the same namespaces every real run gets.
  SandboxSpec probe;
  probe.argv = BaseFlags(info);
  AddSystemView(&probe.argv);
  probe.argv.insert(probe.argv.end(), {"--proc", "/proc", "--dev", "/dev", "--", "/usr/bin/true"});
  probe.limits.wall_seconds = 10;
  auto p = RunSandboxed(probe);
  if (!p.ok()) {
    info.unavailable = fmt::format("{} does not start: {}", path, p.status().message());
  } else if (p->timed_out || p->signaled || p->exit_code != 0) {
    std::string err = p->stderr_data.substr(0, 300);
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    info.unavailable = fmt::format("{} cannot create namespaces here ({}{}{})", path, p->Describe(),
                                   err.empty() ? "" : ": ", err);
  }
  return info;
}

}  // namespace

// ---- seccomp ----

Result<const std::vector<sock_filter>*> SeccompProgram() {
  static const Result<std::vector<sock_filter>> program = BuildSeccomp();
  if (!program.ok())
    return program.status();
  return &*program;
}

std::string SeccompSummary() {
  return "EPERM for non-AF_UNIX sockets, ptrace, mount and namespace calls, bpf, perf_event_open, "
         "keyctl, io_uring, module, kexec and reboot calls";
}

// ---- cgroup ----

Result<std::unique_ptr<Cgroup>> Cgroup::Create(const SandboxLimits& limits) {
  std::unique_ptr<Cgroup> cg(new Cgroup());
  const CgroupLayout l = ReadCgroupLayout();
  const std::string name = FreshCgroupName();
  std::string limits_text;
  if (limits.cgroup_memory_bytes > 0)
    limits_text += "memory " + Bytes(limits.cgroup_memory_bytes);
  if (limits.cgroup_pids > 0)
    limits_text += fmt::format("{}pids {}", limits_text.empty() ? "" : ", ", limits.cgroup_pids);
  if (limits_text.empty())
    limits_text = "no limits";

  auto open_procs = [&](const std::string& dir) -> Status {
    int fd = ::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
      return Status::Error("open {}/cgroup.procs: {}", dir, strerror(errno));
    cg->procs_fds_.push_back(fd);
    return Status::Ok();
  };
  auto make_dir = [&](const std::string& dir) -> Status {
    if (::mkdir(dir.c_str(), 0755) != 0)
      return Status::Error("mkdir {}: {}", dir, strerror(errno));
    cg->dirs_.push_back(dir);
    return Status::Ok();
  };

  // v2: a child of our own cgroup (or of $WARPSMITH_CGROUP_PARENT, a delegated folder) whose
  // parent hands the memory and pids controllers down.
  std::string why_v2;
  {
    const char* parent_env = std::getenv("WARPSMITH_CGROUP_PARENT");
    std::string parent = parent_env != nullptr && *parent_env != '\0'
                             ? std::string(parent_env)
                             : (l.v2_mount.empty() ? "" : CgroupDir(l, l.v2_mount, l.v2_path));
    if (parent.empty()) {
      why_v2 = "no cgroup2 mount";
    } else {
      std::string control = ReadSmallFile(parent + "/cgroup.subtree_control");
      if (!HasWord(control, "memory") || !HasWord(control, "pids")) {
        // Possible only where the parent holds no processes itself (or is the root).
        (void)WriteSmallFile(parent + "/cgroup.subtree_control", "+memory +pids");
        control = ReadSmallFile(parent + "/cgroup.subtree_control");
      }
      if (!HasWord(control, "memory") || !HasWord(control, "pids")) {
        why_v2 = fmt::format("{} does not delegate memory and pids to child cgroups", parent);
      } else {
        std::string dir = parent + "/" + name;
        Status s = make_dir(dir);
        if (s.ok() && limits.cgroup_memory_bytes > 0)
          s = WriteSmallFile(dir + "/memory.max", std::to_string(limits.cgroup_memory_bytes));
        if (s.ok() && limits.cgroup_memory_bytes > 0 && fs::exists(dir + "/memory.swap.max"))
          s = WriteSmallFile(dir + "/memory.swap.max", "0");
        if (s.ok() && limits.cgroup_pids > 0)
          s = WriteSmallFile(dir + "/pids.max", std::to_string(limits.cgroup_pids));
        if (s.ok())
          s = open_procs(dir);
        if (s.ok()) {
          cg->v2_ = true;
          cg->description_ = fmt::format("v2 {} ({})", dir, limits_text);
          return cg;
        }
        why_v2 = s.message();
        cg.reset(new Cgroup());  // removes what was made
      }
    }
  }

  // v1: one folder in the memory hierarchy, one in the pids hierarchy.
  std::string why_v1;
  auto mem = l.v1_mounts.find("memory"), pids = l.v1_mounts.find("pids");
  if (mem == l.v1_mounts.end() || pids == l.v1_mounts.end()) {
    why_v1 = "no v1 memory and pids hierarchies";
  } else {
    std::string mem_dir =
        CgroupDir(l, mem->second, l.v1_paths.count("memory") ? l.v1_paths.at("memory") : "/") +
        "/" + name;
    std::string pids_dir =
        CgroupDir(l, pids->second, l.v1_paths.count("pids") ? l.v1_paths.at("pids") : "/") + "/" +
        name;
    Status s = make_dir(mem_dir);
    if (s.ok())
      s = make_dir(pids_dir);
    if (s.ok() && limits.cgroup_memory_bytes > 0)
      s = WriteSmallFile(mem_dir + "/memory.limit_in_bytes",
                         std::to_string(limits.cgroup_memory_bytes));
    if (s.ok() && limits.cgroup_pids > 0)
      s = WriteSmallFile(pids_dir + "/pids.max", std::to_string(limits.cgroup_pids));
    if (s.ok())
      s = open_procs(mem_dir);
    if (s.ok())
      s = open_procs(pids_dir);
    if (s.ok()) {
      cg->description_ = fmt::format("v1 memory+pids {} ({})", name, limits_text);
      return cg;
    }
    why_v1 = s.message();
  }
  return Status::Error("v2: {}; v1: {}", why_v2, why_v1);
}

void Cgroup::KillAll() const {
  for (const std::string& dir : dirs_) {
    if (v2_ && fs::exists(dir + "/cgroup.kill")) {
      (void)WriteSmallFile(dir + "/cgroup.kill", "1");
      continue;
    }
    for (pid_t p : CgroupPids(dir)) ::kill(p, SIGKILL);
  }
}

bool Cgroup::OomKilled() const {
  if (dirs_.empty())
    return false;
  if (v2_)
    return KeyedValue(dirs_[0] + "/memory.events", "oom_kill") > 0;
  return KeyedValue(dirs_[0] + "/memory.oom_control", "oom_kill") > 0;
}

Cgroup::~Cgroup() {
  for (int fd : procs_fds_) ::close(fd);
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
    // rmdir fails with EBUSY while processes remain; killed ones take a moment to leave.
    for (int attempt = 0; attempt < 200; ++attempt) {
      if (::rmdir(it->c_str()) == 0 || errno == ENOENT)
        break;
      if (errno != EBUSY)
        break;
      KillAll();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

// ---- bubblewrap ----

BwrapInfo ProbeBwrap() {
  std::string path = FindBwrap();
  if (path.empty()) {
    BwrapInfo info;
    info.unavailable =
        "bwrap not found (install bubblewrap, put bwrap beside warpsmith, or set "
        "WARPSMITH_BWRAP)";
    return info;
  }
  static std::mutex mu;
  static std::map<std::string, BwrapInfo> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(path);
    if (it != cache.end())
      return it->second;
  }
  BwrapInfo info = ProbeBwrapAt(path);  // outside the lock: it runs children
  std::lock_guard<std::mutex> lock(mu);
  return cache.emplace(path, info).first->second;
}

Result<std::vector<std::string>> BwrapCommand(const BwrapInfo& bwrap, const SandboxPolicy& policy,
                                              const std::string& program,
                                              const std::vector<std::string>& argv,
                                              const std::string& cwd, int seccomp_fd,
                                              std::string* gpu_desc) {
  // Both the bind and the exec need the program's absolute path: the child starts elsewhere.
  const std::string program_abs = fs::absolute(program).lexically_normal().string();
  std::vector<std::string> a = BaseFlags(bwrap);
  AddSystemView(&a);
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev"});
  if (bwrap.tmpfs_size)
    a.insert(a.end(), {"--size", std::to_string(int64_t{256} << 20)});
  a.insert(a.end(), {"--tmpfs", "/tmp"});

  // Binds at the same paths inside as outside, parents before children.
  struct Bind {
    std::string path;
    bool writable;
  };
  std::vector<Bind> binds;
  auto absolute = [](const std::string& p) { return fs::absolute(p).lexically_normal().string(); };
  auto add_ro = [&](const std::string& p) {
    std::string path = absolute(p);
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    if (!UnderSystemRoot(path))
      binds.push_back({path, false});
  };

  if (policy.gpu) {
    std::vector<std::string> nodes = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"};
    if (policy.gpu_indices.empty()) {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator("/dev", ec)) {
        std::string n = e.path().filename().string();
        if (n.size() > 6 && n.compare(0, 6, "nvidia") == 0 &&
            std::all_of(n.begin() + 6, n.end(), ::isdigit))
          nodes.push_back(e.path().string());
      }
    } else {
      for (int i : policy.gpu_indices) nodes.push_back(fmt::format("/dev/nvidia{}", i));
    }
    std::string bound;
    for (const auto& n : nodes) {
      if (!fs::exists(n))
        continue;
      // NOTE: --dev-bind, not --bind: --dev mounts /dev nodev, and a plain bind onto it fails.
      a.insert(a.end(), {"--dev-bind", n, n});
      bound += (bound.empty() ? "" : ",") + n;
    }
    *gpu_desc = bound.empty() ? "no NVIDIA device nodes on this machine" : "nodes " + bound;
    a.insert(a.end(), {"--ro-bind", "/sys", "/sys"});
    for (const auto& d : DriverLibraryDirs()) add_ro(d);
  }
  // What LD_LIBRARY_PATH names must be there for the program to start as it would outside.
  if (const char* ld = std::getenv("LD_LIBRARY_PATH"); ld != nullptr) {
    std::istringstream in(ld);
    std::string d;
    while (std::getline(in, d, ':')) {
      if (!d.empty() && d.front() == '/' && fs::is_directory(d))
        add_ro(d);
    }
  }
  add_ro(program_abs);
  for (const auto& p : policy.read_only_paths) {
    if (!fs::exists(p))
      return Status::Error("read-only path {} does not exist", p);
    add_ro(p);
  }
  if (!policy.scratch_dir.empty()) {
    if (!fs::is_directory(policy.scratch_dir))
      return Status::Error("scratch folder {} does not exist", policy.scratch_dir);
    binds.push_back({absolute(policy.scratch_dir), true});
  }
  std::stable_sort(binds.begin(), binds.end(), [](const Bind& x, const Bind& y) {
    return std::count(x.path.begin(), x.path.end(), '/') <
           std::count(y.path.begin(), y.path.end(), '/');
  });
  std::vector<std::string> seen;
  for (const auto& b : binds) {
    if (std::find(seen.begin(), seen.end(), b.path) != seen.end())
      continue;
    seen.push_back(b.path);
    a.insert(a.end(), {b.writable ? "--bind" : "--ro-bind", b.path, b.path});
  }
  // The root itself (a tmpfs holding the mount points) becomes read-only too: what stays writable
  // is the scratch folder and the private, size-capped /tmp and /dev, gone after the run.
  a.insert(a.end(), {"--remount-ro", "/"});
  a.insert(a.end(), {"--chdir", cwd});
  if (seccomp_fd >= 0)
    a.insert(a.end(), {"--seccomp", std::to_string(seccomp_fd)});
  a.insert(a.end(), {"--", program_abs});
  a.insert(a.end(), argv.begin() + 1, argv.end());
  return a;
}

}  // namespace ws::sandbox_internal
