// Compilation: the orchestrator side. The NVRTC call itself happens in ws_compile, a separate
// process under limits, so a preprocessor or template bomb costs a child, not us.
#include <sys/stat.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <nvrtc.h>
#include <openssl/evp.h>

#include "evaluator/evaluator.h"
#include "evaluator/internal.h"
#include "evaluator/resources_json.h"
#include "evaluator/source_check.h"
#include "sandbox/sandbox.h"

namespace ws {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string_view ArchName(Arch a) { return a == Arch::kSm90a ? "sm_90a" : "sm_100a"; }

Result<Arch> ParseArch(std::string_view name) {
  if (name == "sm_90a") return Arch::kSm90a;
  if (name == "sm_100a") return Arch::kSm100a;
  return Status::Error("unknown arch '{}' (allowed: sm_90a, sm_100a)", name);
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

ResourceReport ParsePtxasLog(const std::string& log) {
  ResourceReport report;
  std::istringstream in(log);
  std::string line;
  static const std::regex kEntry(R"(Compiling entry function '([^']+)')");
  static const std::regex kProps(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex kUsed(R"(Used (\d+) registers)");
  static const std::regex kSmem(R"((\d+) bytes smem)");
  ResourceReport::Kernel* cur = nullptr;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, kEntry)) {
      report.kernels.push_back({});
      cur = &report.kernels.back();
      cur->name = m[1];
    } else if (cur && std::regex_search(line, m, kProps)) {
      cur->stack_frame = std::stoll(m[1]);
      cur->spill_stores = std::stoll(m[2]);
      cur->spill_loads = std::stoll(m[3]);
    } else if (cur && std::regex_search(line, m, kUsed)) {
      cur->registers = std::stoi(m[1]);
      if (std::regex_search(line, m, kSmem)) cur->smem_static = std::stoll(m[1]);
    }
  }
  return report;
}

json ResourcesToJson(const ResourceReport& r) {
  json arr = json::array();
  for (const auto& k : r.kernels) {
    arr.push_back({{"name", k.name},
                   {"registers", k.registers},
                   {"smem_static", k.smem_static},
                   {"stack_frame", k.stack_frame},
                   {"spill_stores", k.spill_stores},
                   {"spill_loads", k.spill_loads}});
  }
  return arr;
}

ResourceReport ResourcesFromJson(const json& kernels) {
  ResourceReport r;
  for (const auto& k : kernels) {
    ResourceReport::Kernel kk;
    kk.name = k.value("name", "");
    kk.registers = k.value("registers", 0);
    kk.smem_static = k.value("smem_static", int64_t{0});
    kk.stack_frame = k.value("stack_frame", int64_t{0});
    kk.spill_stores = k.value("spill_stores", int64_t{0});
    kk.spill_loads = k.value("spill_loads", int64_t{0});
    r.kernels.push_back(kk);
  }
  return r;
}

std::string SourceTreePath(const std::string& rel) {
  fs::path beside = fs::path(SelfDir()).parent_path() / rel;
  std::error_code ec;
  if (fs::exists(beside, ec)) return beside.string();
  return std::string(WS_SOURCE_DIR) + "/" + rel;
}

std::string KernelLibraryDir() {
  if (const char* env = std::getenv("WARPSMITH_KERNEL_LIBRARY"); env && *env) return env;
  return SourceTreePath("kernels/include");
}

// The headers are trusted and plain: a line-wise scan of their #include lines suffices (the
// candidate itself went through CheckCandidateSource, which refuses anything cleverer).
const std::regex& LibraryIncludeLine() {
  static const std::regex re(R"re(^\s*#\s*include\s*[<"](ws/[^>"]+)[>"])re");
  return re;
}

LibraryHeaders LibraryClosure(std::string_view source, const std::string& library_dir) {
  const std::regex& kInclude = LibraryIncludeLine();
  LibraryHeaders headers;
  std::vector<std::string> texts = {std::string(source)};
  while (!texts.empty()) {
    std::istringstream in(texts.back());
    texts.pop_back();
    std::smatch m;
    for (std::string line; std::getline(in, line);) {
      if (!std::regex_search(line, m, kInclude) || headers.count(m[1])) continue;
      auto text = ReadFile(library_dir + "/" + m[1].str());
      if (!text.ok()) continue;
      headers[m[1]] = *text;
      texts.push_back(*text);
    }
  }
  return headers;
}

Status WriteLibraryHeaders(const LibraryHeaders& headers, const std::string& library_dir) {
  for (const auto& [name, text] : headers) {
    const fs::path to = fs::path(library_dir) / name;
    std::error_code ec;
    fs::create_directories(to.parent_path(), ec);
    if (ec) return Status::Error("cannot create {}: {}", to.parent_path().string(), ec.message());
    WS_RETURN_IF_ERROR(WriteFileAtomic(to.string(), text));
  }
  return Status::Ok();
}

static void InlineInto(std::string_view text, bool is_header, const LibraryHeaders& headers,
                       std::set<std::string>& done, std::string& out) {
  static const std::regex kPragmaOnce(R"(^\s*#\s*pragma\s+once\b)");
  std::istringstream in{std::string(text)};
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, LibraryIncludeLine()) && headers.count(m[1])) {
      const std::string name = m[1];
      if (done.insert(name).second) {
        out += fmt::format("// ---- {} (warpsmith device library, inlined) ----\n", name);
        InlineInto(headers.at(name), true, headers, done, out);
        out += fmt::format("// ---- end of {} ----\n", name);
      }
      continue;
    }
    if (is_header && std::regex_search(line, kPragmaOnce)) continue;
    out += line;
    out += '\n';
  }
}

std::string InlineLibrary(std::string_view source, const LibraryHeaders& headers) {
  std::set<std::string> done;
  std::string out;
  InlineInto(source, false, headers, done, out);
  return out;
}

std::string KernelHash(std::string_view source, const LibraryHeaders& headers) {
  if (headers.empty()) return Sha256Hex(source);
  std::string all(source);
  for (const auto& [name, text] : headers) {
    all += fmt::format("\n// warpsmith library {} ({} bytes)\n", name, text.size());
    all += text;
  }
  return Sha256Hex(all);
}

std::string ReferenceLibraryDir(const ProblemSpec& spec) {
  return (fs::path(spec.dir).parent_path() / "include").string();
}

std::string KernelLibraryDir(const EvaluatorOptions& opts) {
  return opts.kernel_library.empty() ? KernelLibraryDir() : opts.kernel_library;
}

// What an extra include directory holds, for the cache key: every file's path and content hash,
// in order, so an edited header recompiles the candidates that may include it.
static std::string DirectoryDigest(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    auto text = ReadFile(it->path().string());
    files.emplace_back(fs::relative(it->path(), dir, ec).string(),
                       text.ok() ? Sha256Hex(*text) : "unreadable");
  }
  std::sort(files.begin(), files.end());
  std::string digest;
  for (const auto& [name, hash] : files) digest += fmt::format("  {} {}\n", name, hash);
  return digest;
}

std::vector<std::string> DefaultIncludeDirs() {
  std::vector<std::string> dirs;
  std::string cuda_home = std::getenv("CUDA_HOME") ? std::getenv("CUDA_HOME") : "";
  for (std::string base : {cuda_home + "/include", std::string(WS_CUDA_INCLUDE_DIR)}) {
    if (base == "/include" || !fs::is_directory(base)) continue;
    dirs.push_back(base);
    if (fs::is_directory(base + "/cccl")) dirs.push_back(base + "/cccl");
    break;
  }
  return dirs;
}

Result<CompileResult> Compile(const CompileRequest& req, const CompileOptions& opts) {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  // An extra folder that does not exist (a tree without that library) finds nothing, harmlessly.
  std::vector<std::string> includes = DefaultIncludeDirs();
  includes.insert(includes.end(), req.include_dirs.begin(), req.include_dirs.end());

  // Everything that changes the cubin goes into its key.
  std::string key = fmt::format("warpsmith-compile-v1\nnvrtc {}.{}\narch {}\n", major, minor,
                                ArchName(req.arch));
  for (const auto& [k, v] : req.defines) key += fmt::format("-D{}={}\n", k, v);
  for (const auto& d : includes) key += fmt::format("-I{}\n", d);
  for (const auto& d : req.include_dirs) key += DirectoryDigest(d);
  key += req.source;

  CompileResult result;
  result.hash = Sha256Hex(key);
  // Before the cache: a source the rules now reject must not be served a cubin compiled earlier.
  if (Status s = CheckCandidateSource(req.source, includes); !s.ok()) {
    result.ok = false;
    result.log = s.message();
    return result;
  }
  std::string cache_dir = opts.cache_dir.empty() ? ".warpsmith/cache" : opts.cache_dir;
  std::error_code ec;
  fs::create_directories(cache_dir, ec);
  if (ec) return Status::Error("cannot create the compile cache {}: {}", cache_dir, ec.message());
  std::string cubin = fmt::format("{}/{}.cubin", cache_dir, result.hash);
  std::string meta = fmt::format("{}/{}.json", cache_dir, result.hash);

  if (fs::exists(cubin) && fs::exists(meta)) {
    auto text = ReadFile(meta);
    if (text.ok()) {
      json m = json::parse(*text, nullptr, false);
      if (m.is_object() && m.value("ok", false)) {
        result.ok = true;
        result.cached = true;
        result.cubin_path = cubin;
        result.log = m.value("log", "");
        result.resources = ResourcesFromJson(m.value("resources", json::array()));
        return result;
      }
    }
  }

  std::string worker = opts.compile_worker.empty() ? SelfDir() + "/ws_compile" : opts.compile_worker;
  // The worker sees the system read-only and writes only into a private scratch folder, on the
  // cache's filesystem so the cubin moves into the cache with a rename.
  std::string scratch = fmt::format("{}/.compile.XXXXXX", cache_dir);
  if (::mkdtemp(scratch.data()) == nullptr) {
    return Status::Error("cannot create a compile scratch folder in {}: {}", cache_dir,
                         std::strerror(errno));
  }
  scratch = fs::absolute(scratch).lexically_normal().string();
  struct RemoveScratch {
    std::string dir;
    ~RemoveScratch() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } remove_scratch{scratch};
  json request = {{"source", req.source},
                  {"name", "candidate.cu"},
                  {"arch", std::string(ArchName(req.arch))},
                  {"defines", req.defines},
                  {"include_dirs", includes},
                  {"out", scratch + "/candidate.cubin"}};
  SandboxSpec spec;
  WS_ASSIGN_OR_RETURN(spec.policy, DefaultSandboxPolicy());
  spec.policy.scratch_dir = scratch;
  for (const auto& dir : includes) {
    if (fs::exists(dir)) spec.policy.read_only_paths.push_back(dir);
  }
  spec.limits.cgroup_memory_bytes = opts.memory_bytes;
  spec.limits.cgroup_pids = 64;
  spec.argv = {worker};
  spec.stdin_data = request.dump();
  spec.limits.wall_seconds = opts.timeout_s;
  spec.limits.address_space_bytes = opts.memory_bytes;
  spec.limits.cpu_seconds = static_cast<int64_t>(opts.timeout_s) + 5;
  spec.limits.file_size_bytes = int64_t{512} << 20;
  spec.limits.output_cap_bytes = 4 << 20;
  WS_ASSIGN_OR_RETURN(SandboxResult run, RunSandboxed(spec));
  result.sandbox_layers = run.layers;
  std::string out_tmp = request["out"].get<std::string>();

  auto fail = [&](std::string why) {
    fs::remove(out_tmp, ec);
    result.ok = false;
    result.log = std::move(why);
    return result;
  };
  // A preprocessor or template bomb ends here: each limit is named, so the agent learns which.
  const int64_t memory_mib = opts.memory_bytes >> 20;
  if (run.timed_out) {
    return fail(fmt::format("compile hit the wall-clock limit: stopped after {:.0f} s (limit "
                            "{:.0f} s; memory limit {} MiB)",
                            run.wall_seconds, opts.timeout_s, memory_mib));
  }
  if (run.signaled && run.signal == SIGXCPU) {
    return fail(fmt::format("compile hit the CPU-time limit ({} s) and was stopped",
                            spec.limits.cpu_seconds));
  }
  if (run.signaled || run.exit_code != 0) {
    return fail(fmt::format("the compiler process failed ({}); it most likely hit the memory limit "
                            "({} MiB) or the time limit ({:.0f} s); stderr: {}",
                            run.Describe(), memory_mib, opts.timeout_s,
                            run.stderr_data.substr(0, 2000)));
  }
  json reply = json::parse(run.stdout_data, nullptr, false);
  if (!reply.is_object()) {
    // The candidate's outcome is data even when the worker's reply is cut or garbled.
    return fail(fmt::format("the compiler's reply was unreadable ({} bytes, {} dropped); stderr: {}",
                            run.stdout_data.size(), run.stdout_dropped,
                            run.stderr_data.substr(0, 2000)));
  }
  result.log = reply.value("log", "");
  if (!reply.value("ok", false) &&
      (result.log.find("out of memory") != std::string::npos ||
       result.log.find("OUT_OF_MEMORY") != std::string::npos ||
       result.log.find("std::bad_alloc") != std::string::npos)) {
    result.log = fmt::format("compile hit the memory limit ({} MiB):\n{}", memory_mib, result.log);
  }
  if (result.log.size() > 64 * 1024) result.log = result.log.substr(0, 64 * 1024) + "\n[log truncated]";
  if (!reply.value("ok", false)) return fail(result.log.empty() ? "compile failed" : result.log);
  result.resources = ParsePtxasLog(result.log);
  fs::rename(out_tmp, cubin, ec);
  if (ec) return Status::Error("cannot move the cubin into the cache: {}", ec.message());
  json m = {{"ok", true}, {"log", result.log}, {"resources", ResourcesToJson(result.resources)}};
  WS_RETURN_IF_ERROR(WriteFileAtomic(meta, m.dump()));
  result.ok = true;
  result.cubin_path = cubin;
  return result;
}

}  // namespace ws
