// Bench-shape outputs as keyed digests (docs/design-notes.md): which outputs, how a candidate's
// digests meet the reference's, and where an evaluation's scratch folder goes.
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

#include "evaluator/internal.h"

namespace ws {
namespace {

constexpr long kTmpfsMagic = 0x01021994;  // TMPFS_MAGIC, linux/magic.h

bool IsDigest(const std::string& s) {
  return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::vector<std::string> DigestedOutputs(const ProblemSpec& spec, std::string_view kind) {
  if (kind != "bench")
    return {};
  std::set<std::string> partners;
  for (const auto& [name, tol] : spec.tolerance) {
    // A custom checker sees every output's bytes; an mx_data check reads its partner's.
    if (tol.kind == ToleranceKind::kCustom)
      return {};
    if (!tol.partner.empty())
      partners.insert(tol.partner);
  }
  std::vector<std::string> out;
  for (const TensorSpec& t : spec.tensors) {
    if (t.role != TensorRole::kOutput || partners.count(t.name))
      continue;
    auto it = spec.tolerance.find(t.name);
    if (it != spec.tolerance.end() && it->second.kind == ToleranceKind::kExact) {
      out.push_back(t.name);
    }
  }
  return out;
}

Result<std::map<std::string, int64_t>> SampledOutputRows(const ProblemSpec& spec,
                                                         const SymbolTable& symbols,
                                                         std::string_view kind,
                                                         const std::vector<std::string>& digested) {
  std::map<std::string, int64_t> out;
  if (kind != "bench")
    return out;
  for (const TensorSpec& t : spec.tensors) {
    if (t.role != TensorRole::kOutput ||
        std::find(digested.begin(), digested.end(), t.name) != digested.end())
      continue;
    auto tol = spec.tolerance.find(t.name);
    if (tol == spec.tolerance.end() ||
        (tol->second.kind != ToleranceKind::kUlp && tol->second.kind != ToleranceKind::kClose &&
         tol->second.kind != ToleranceKind::kGemm))
      continue;
    WS_ASSIGN_OR_RETURN(std::vector<int64_t> dims, TensorDims(t, symbols));
    if (dims.size() < 2 || dims.back() <= 0)
      continue;
    const int64_t row_bytes = dims.back() * DTypeSize(t.dtype);
    const int64_t rows = LeadingRows(dims);
    if (rows >= kSampleMinRows && rows * row_bytes >= kSampleMinBytes)
      out[t.name] = row_bytes;
  }
  return out;
}

std::map<std::string, std::string> RunDigests(const nlohmann::json& case_result,
                                              const std::string& tag) {
  std::map<std::string, std::string> out;
  if (!case_result.is_object() || !case_result.contains("digests"))
    return out;
  const nlohmann::json& d = case_result["digests"];
  if (!d.is_object() || !d.contains(tag) || !d[tag].is_object())
    return out;
  for (const auto& [name, value] : d[tag].items()) {
    if (value.is_string())
      out[name] = value.get<std::string>();
  }
  return out;
}

Result<std::string> CompareDigests(const std::vector<std::string>& outputs,
                                   const std::map<std::string, std::string>& got,
                                   const std::map<std::string, std::string>& want) {
  for (const std::string& name : outputs) {
    auto w = want.find(name);
    if (w == want.end() || !IsDigest(w->second)) {
      return Status::Error("the reference runner gave no digest of output '{}'", name);
    }
    auto g = got.find(name);
    if (g == got.end() || !IsDigest(g->second)) {
      return fmt::format("output '{}' was not written back (no digest)", name);
    }
    if (g->second != w->second) {
      return fmt::format(
          "output '{}' differs from the reference's (their keyed 128-bit digests differ: {} "
          "against {})",
          name, g->second, w->second);
    }
  }
  return std::string();
}

std::string ChooseScratchRoot(const std::vector<std::string>& tmpfs_roots, int64_t need_bytes,
                              const std::string& fallback) {
  // The runners' dumps on a tmpfs are memory, charged to the runner's cgroup: only a modest
  // amount, with room to spare.
  constexpr int64_t kMaxTmpfsBytes = int64_t{16} << 30;
  constexpr int64_t kSpareBytes = int64_t{1} << 30;
  if (need_bytes < 0 || need_bytes > kMaxTmpfsBytes)
    return fallback;
  for (const std::string& root : tmpfs_roots) {
    struct statfs fs_info;
    struct statvfs vfs;
    if (::statfs(root.c_str(), &fs_info) != 0 || fs_info.f_type != kTmpfsMagic)
      continue;
    if (::statvfs(root.c_str(), &vfs) != 0 || ::access(root.c_str(), W_OK) != 0)
      continue;
    const int64_t avail = static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
    if (avail >= need_bytes + std::max(need_bytes, kSpareBytes))
      return root;
  }
  return fallback;
}

}  // namespace ws
