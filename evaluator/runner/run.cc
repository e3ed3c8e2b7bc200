// `ws_runner run JOB.json`: the per-case steps of docs/runner-protocol.md.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <cuda.h>

#include <nlohmann/json.hpp>

#include "base/file_lock.h"
#include "base/files.h"
#include "evaluator/runner/commands.h"
#include "evaluator/runner/cuda_util.h"
#include "evaluator/runner/job.h"
#include "evaluator/runner/library_baselines.h"
#include "evaluator/runner/watchdog.h"
#include "problems/init.h"

namespace ws::runner {
namespace {

using ojson = nlohmann::ordered_json;

constexpr int64_t kGuardBytes = 64 << 10;

// One device allocation laid out as [guard][data][guard]; the after-guard starts at the data's
// last byte + 1, so even a one-byte overrun lands in it.
struct GuardedBuffer {
  CUdeviceptr base = 0;
  CUdeviceptr ptr = 0;
  int64_t bytes = 0;
  std::string label;  // "output 'q'", "input 'x' (set 1)", "the workspace"
};

// The job's tensor-map enum values are the driver's (tensor_map.h keeps CUDA out of the job).
static_assert(kTmaUint8 == CU_TENSOR_MAP_DATA_TYPE_UINT8 &&
              kTmaInt32 == CU_TENSOR_MAP_DATA_TYPE_INT32 &&
              kTmaInt64 == CU_TENSOR_MAP_DATA_TYPE_INT64 &&
              kTmaFloat16 == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 &&
              kTmaFloat32 == CU_TENSOR_MAP_DATA_TYPE_FLOAT32 &&
              kTmaBfloat16 == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
static_assert(CU_TENSOR_MAP_SWIZZLE_128B == 3 && CU_TENSOR_MAP_L2_PROMOTION_L2_256B == 3 &&
              CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA == 1 &&
              CU_TENSOR_MAP_INTERLEAVE_NONE == 0);

// One kernel argument: 8 bytes for pointers and integers, 128 (64-byte aligned, like CUtensorMap)
// for a tensor map passed by value.
struct alignas(64) ArgSlot {
  unsigned char bytes[sizeof(CUtensorMap)];
};
static_assert(sizeof(CUtensorMap) == 128);

// A launch with its function and marshalled arguments, one argument block per input set.
struct PreparedLaunch {
  const LaunchJob* job = nullptr;
  CUfunction f = nullptr;
  std::vector<std::vector<ArgSlot>> values;  // [set][arg]
  std::vector<std::vector<void*>> params;    // [set][arg] -> values
};

// Encodes `e` over the buffer at `address` into `out` (128 bytes). A tensor without elements has
// no map: the kernel gets zeros, and must not use them.
Status EncodeTensorMap(const TensorMapEncoding& e, CUdeviceptr address, void* out) {
  std::memset(out, 0, sizeof(CUtensorMap));
  if (e.empty) return Status::Ok();
  CUresult r = cuTensorMapEncodeTiled(
      static_cast<CUtensorMap*>(out), static_cast<CUtensorMapDataType>(e.data_type), e.rank,
      reinterpret_cast<void*>(address), e.global_dim, e.rank > 1 ? e.global_strides : nullptr,
      e.box_dim, e.element_strides, static_cast<CUtensorMapInterleave>(e.interleave),
      static_cast<CUtensorMapSwizzle>(e.swizzle), static_cast<CUtensorMapL2promotion>(e.l2_promotion),
      static_cast<CUtensorMapFloatOOBfill>(e.oob_fill));
  if (r != CUDA_SUCCESS) return CuError(r, "cuTensorMapEncodeTiled");
  return Status::Ok();
}

// Exits on host I/O failure: the result would be incomplete, and that is our fault, not the
// candidate's.
[[noreturn]] void HostFailure(const std::string& what) {
  std::fprintf(stderr, "ws_runner: %s\n", what.c_str());
  std::exit(kExitRunnerError);
}

// Copies device bytes into dump files through one pinned buffer, reused chunk after chunk. A
// pageable copy into a fresh vector stages through the driver's own buffer and first faults in and
// zeroes every page: 4.9 s of rmsnorm_quantize's evaluation went to dumps that way (s33c1).
class DumpWriter {
 public:
  DumpWriter() = default;
  DumpWriter(const DumpWriter&) = delete;
  DumpWriter& operator=(const DumpWriter&) = delete;
  ~DumpWriter() {
    if (pinned_) cuMemFreeHost(pinned_);
  }

  /// Writes `bytes` from `src` to `path`. Returns the copy's error, which is the context's (the
  /// candidate's doing); the file is then removed. Host I/O failure ends the runner.
  CUresult Write(const std::string& path, CUdeviceptr src, size_t bytes) {
    return WriteSpans(path, src, {{0, bytes}});
  }

  /// Writes rows `rows` (ascending) of `row_bytes` each from `src` to `path`, back to back.
  CUresult WriteRows(const std::string& path, CUdeviceptr src, size_t row_bytes,
                     const std::vector<int64_t>& rows) {
    std::vector<std::pair<size_t, size_t>> spans;  // adjacent rows merged into one copy
    for (int64_t r : rows) {
      const size_t off = static_cast<size_t>(r) * row_bytes;
      if (!spans.empty() && spans.back().first + spans.back().second == off)
        spans.back().second += row_bytes;
      else
        spans.push_back({off, row_bytes});
    }
    return WriteSpans(path, src, spans);
  }

 private:
  // The spans (offset, bytes) of `src`, in order, through the buffer kChunk bytes at a time.
  CUresult WriteSpans(const std::string& path, CUdeviceptr src,
                      const std::vector<std::pair<size_t, size_t>>& spans) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) HostFailure(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
    uint8_t* buf = Buffer();
    size_t filled = 0;
    const auto flush = [&] {
      for (size_t done = 0; done < filled;) {
        const ssize_t w = ::write(fd, buf + done, filled - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) HostFailure(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
        done += static_cast<size_t>(w);
      }
      filled = 0;
    };
    CUresult r = CUDA_SUCCESS;
    for (const auto& [off, len] : spans) {
      for (size_t at = 0; at < len && r == CUDA_SUCCESS;) {
        if (filled == kChunk) flush();
        const size_t n = std::min(kChunk - filled, len - at);
        r = cuMemcpyDtoH(buf + filled, src + off + at, n);
        filled += n;
        at += n;
      }
      if (r != CUDA_SUCCESS) break;
    }
    if (r == CUDA_SUCCESS) flush();
    if (::close(fd) != 0)
      HostFailure(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    if (r != CUDA_SUCCESS) ::unlink(path.c_str());
    return r;
  }

  static constexpr size_t kChunk = size_t{32} << 20;

  // Pinned if the driver gives it; else a plain buffer (then the copy is pageable, as before).
  uint8_t* Buffer() {
    if (!pinned_ && fallback_.empty()) {
      void* p = nullptr;
      if (cuMemHostAlloc(&p, kChunk, 0) == CUDA_SUCCESS)
        pinned_ = p;
      else
        fallback_.resize(kChunk);
    }
    return pinned_ ? static_cast<uint8_t*>(pinned_) : fallback_.data();
  }

  void* pinned_ = nullptr;
  std::vector<uint8_t> fallback_;
};

std::string Hex64(uint64_t v) { return fmt::format("{:016x}", v); }

class CaseRun {
 public:
  CaseRun(const DeviceContext& dc, const Helpers& h, CUmodule module, const Status& module_status,
          const CaseJob& c, uint64_t salt, uint64_t digest_key)
      : dc_(dc), h_(h), module_(module), module_status_(module_status), c_(c), salt_(salt),
        digest_key_(digest_key), sets_(static_cast<int>(c.input_seeds.size())) {}
  ~CaseRun();

  /// Runs the case. Returns its result object; `crashed()` says whether the context is lost.
  ojson Run();
  bool crashed() const { return status_ == "crashed"; }

 private:
  Status Setup();
  Status Allocate(int64_t bytes, std::string label, GuardedBuffer* out);
  Status PrepareLaunches();
  Result<std::vector<uint64_t>> HashInputs();
  Status GenerateSet(int set, uint64_t seed);
  Result<std::vector<uint64_t>> HashSet(int set);
  void CompareInputHashes(const std::vector<uint64_t>& after, ojson* input_hashes);
  Status BeforeRun();
  bool RunPlan(int set, const std::string& where, bool sync_each);
  bool RunLibrary(int set, const std::string& where, bool sync_each);
  Status LaunchGuardCheck();
  Status CollectGuards();
  void DumpOutputs(const std::string& tag);
  void DumpInputs();
  void Timing();
  void Fail(const std::string& status, const std::string& message);
  void FailOrCrash(const Status& s, const std::string& context);
  std::string LaunchName(size_t k) const;

  const DeviceContext& dc_;
  const Helpers& h_;
  CUmodule module_;
  const Status& module_status_;
  const CaseJob& c_;
  uint64_t salt_;
  uint64_t digest_key_;  // from the job; given to the device only as ws_digest's argument
  int sets_;

  std::vector<std::vector<GuardedBuffer>> inputs_;  // [set][tensor]; unused for outputs
  std::vector<GuardedBuffer> outputs_;              // [tensor]; unused for inputs
  GuardedBuffer workspace_;
  std::vector<CUdeviceptr> plain_allocs_;           // unguarded: metadata, flush buffer
  std::vector<std::string> region_labels_;          // guard regions, in the device arrays' order
  CUdeviceptr region_ptrs_ = 0, region_salts_ = 0, first_bad_ = 0, hash_scratch_ = 0;
  std::vector<PreparedLaunch> launches_;
  std::unique_ptr<LibraryOp> library_;              // a library baseline, in place of launches_
  DumpWriter dump_writer_;
  std::vector<uint64_t> hashes_before_;             // [set * tensors + tensor]

  bool map_error_ = false;  // PrepareLaunches failed encoding a tensor map: the plan's fault
  std::string status_ = "ok";
  std::string message_;
  bool guards_intact_ = true;
  bool inputs_unchanged_ = true;
  ojson dumps_ = ojson::object();
  ojson digests_ = ojson::object();  // run tag -> output -> 32 hex digits
  ojson timing_ = nullptr;
};

CaseRun::~CaseRun() {
  // After a fault these fail harmlessly; the process exits right after anyway.
  for (auto& set : inputs_) {
    for (auto& b : set) {
      if (b.base) cuMemFree(b.base);
    }
  }
  for (auto& b : outputs_) {
    if (b.base) cuMemFree(b.base);
  }
  if (workspace_.base) cuMemFree(workspace_.base);
  for (CUdeviceptr p : plain_allocs_) cuMemFree(p);
}

void CaseRun::Fail(const std::string& status, const std::string& message) {
  if (crashed()) return;
  status_ = status;
  message_ = message;
}

// A failed driver call: if the context is broken the case crashed, otherwise it is a launch error
// (e.g. an allocation the plan asked for that does not fit).
void CaseRun::FailOrCrash(const Status& s, const std::string& context) {
  CUresult sync = cuCtxSynchronize();
  if (sync != CUDA_SUCCESS) {
    Fail("crashed", fmt::format("{} ({}: {})", CuErrorName(sync), context, s.message()));
  } else {
    Fail("launch_error", fmt::format("{}: {}", context, s.message()));
  }
}

std::string CaseRun::LaunchName(size_t k) const {
  return fmt::format("launch {} ({})", k, c_.launches[k].kernel);
}

Status CaseRun::Allocate(int64_t bytes, std::string label, GuardedBuffer* out) {
  out->bytes = bytes;
  out->label = std::move(label);
  CUresult r = cuMemAlloc(&out->base, static_cast<size_t>(bytes + 2 * kGuardBytes));
  if (r != CUDA_SUCCESS) {
    out->base = 0;
    return Status::Error("{} allocating {} bytes for {}", CuErrorName(r), bytes, out->label);
  }
  out->ptr = out->base + kGuardBytes;
  region_labels_.push_back(out->label + ": the guard before it");
  region_labels_.push_back(out->label + ": the guard after it");
  return Status::Ok();
}

Status CaseRun::Setup() {
  const size_t nt = c_.tensors.size();
  inputs_.assign(sets_, std::vector<GuardedBuffer>(nt));
  outputs_.assign(nt, GuardedBuffer());
  // 1. Inputs, one set per seed.
  for (int s = 0; s < sets_; ++s) {
    for (size_t t = 0; t < nt; ++t) {
      const TensorJob& tj = c_.tensors[t];
      if (!tj.input) continue;
      WS_RETURN_IF_ERROR(Allocate(tj.bytes(), fmt::format("input '{}' (set {})", tj.name, s),
                                  &inputs_[s][t]));
    }
  }
  // 2. Outputs and the workspace.
  for (size_t t = 0; t < nt; ++t) {
    const TensorJob& tj = c_.tensors[t];
    if (tj.input) continue;
    WS_RETURN_IF_ERROR(Allocate(tj.bytes(), fmt::format("output '{}'", tj.name), &outputs_[t]));
  }
  if (c_.workspace_bytes > 0) {
    WS_RETURN_IF_ERROR(Allocate(c_.workspace_bytes, "the workspace", &workspace_));
  }
  // Guard metadata: region pointers, salts, first damaged offsets, and two scratch words (the
  // input hash's accumulator; the output digest's two lanes).
  std::vector<uint64_t> ptrs, salts;
  auto add = [&](const GuardedBuffer& b) {
    if (!b.base) return;
    ptrs.push_back(b.base);
    ptrs.push_back(b.ptr + static_cast<CUdeviceptr>(b.bytes));
  };
  for (auto& set : inputs_) {
    for (auto& b : set) add(b);
  }
  for (auto& b : outputs_) add(b);
  add(workspace_);
  // add() walks the buffers in allocation order, the order region_labels_ was filled in.
  WS_CHECK(ptrs.size() == region_labels_.size());
  for (size_t r = 0; r < ptrs.size(); ++r) {
    salts.push_back(ws_mix64(salt_ + r * 0x9E3779B97F4A7C15ull));
  }
  const size_t n = ptrs.size();
  CUdeviceptr meta = 0;
  WS_CUDA_TRY(cuMemAlloc(&meta, (3 * n + 2) * sizeof(uint64_t)));
  plain_allocs_.push_back(meta);
  region_ptrs_ = meta;
  region_salts_ = meta + n * sizeof(uint64_t);
  first_bad_ = meta + 2 * n * sizeof(uint64_t);
  hash_scratch_ = meta + 3 * n * sizeof(uint64_t);
  if (n > 0) {
    // On dc_.stream, not the legacy stream: a pageable cuMemcpyHtoD may return before its DMA
    // lands, and dc_.stream does not wait for the legacy stream, so guard_fill could read stale
    // pointers (a loaded H200 showed a trusted reference's guards never filled).
    WS_CUDA_TRY(cuMemcpyHtoDAsync(region_ptrs_, ptrs.data(), n * sizeof(uint64_t), dc_.stream));
    WS_CUDA_TRY(cuMemcpyHtoDAsync(region_salts_, salts.data(), n * sizeof(uint64_t), dc_.stream));
    WS_CUDA_TRY(cuMemsetD32Async(first_bad_, 0xFFFFFFFFu, 2 * n, dc_.stream));
    long long gb = kGuardBytes;
    void* params[] = {&region_ptrs_, &region_salts_, &gb};
    WS_RETURN_IF_ERROR(LaunchHelper(h_.guard_fill, dc_.stream, kGuardBytes, params,
                                    static_cast<unsigned>(n)));
  }
  for (int s = 0; s < sets_; ++s) WS_RETURN_IF_ERROR(GenerateSet(s, c_.input_seeds[s]));
  WS_ASSIGN_OR_RETURN(hashes_before_, HashInputs());
  WS_CUDA_TRY(cuStreamSynchronize(dc_.stream));
  return Status::Ok();
}

// Every set's input hashes, set-major ([set * tensors + tensor]; 0 for outputs).
Result<std::vector<uint64_t>> CaseRun::HashInputs() {
  std::vector<uint64_t> hashes;
  for (int s = 0; s < sets_; ++s) {
    WS_ASSIGN_OR_RETURN(std::vector<uint64_t> set, HashSet(s));
    hashes.insert(hashes.end(), set.begin(), set.end());
  }
  return hashes;
}

// Input set `set`'s buffers filled from `seed` (at setup; with fresh inputs, before every run).
Status CaseRun::GenerateSet(int set, uint64_t seed) {
  for (size_t t = 0; t < c_.tensors.size(); ++t) {
    const TensorJob& tj = c_.tensors[t];
    if (!tj.input) continue;
    WS_RETURN_IF_ERROR(Generate(h_, dc_.stream, inputs_[set][t].ptr, tj.numel, tj.dtype,
                                tj.init(), seed, tj.tensor_index));
  }
  return Status::Ok();
}

Result<std::vector<uint64_t>> CaseRun::HashSet(int set) {
  std::vector<uint64_t> hashes(c_.tensors.size(), 0);
  for (size_t t = 0; t < c_.tensors.size(); ++t) {
    if (!c_.tensors[t].input) continue;
    WS_ASSIGN_OR_RETURN(hashes[t], HashDevice(h_, dc_.stream, inputs_[set][t].ptr,
                                              inputs_[set][t].bytes, hash_scratch_));
  }
  return hashes;
}

// The setup's input hashes against `after` (every set): a change is a finding.
void CaseRun::CompareInputHashes(const std::vector<uint64_t>& after, ojson* input_hashes) {
  for (int set = 0; set < sets_; ++set) {
    for (size_t t = 0; t < c_.tensors.size(); ++t) {
      if (!c_.tensors[t].input) continue;
      size_t i = set * c_.tensors.size() + t;
      (*input_hashes)[c_.tensors[t].name].push_back(Hex64(hashes_before_[i]));
      if (after[i] != hashes_before_[i]) {
        if (inputs_unchanged_ && status_ == "ok") {
          message_ = fmt::format("input '{}' (set {}) changed during the case",
                                 c_.tensors[t].name, set);
        }
        inputs_unchanged_ = false;
      }
    }
  }
}

Status CaseRun::PrepareLaunches() {
  if (c_.library) {
    WS_ASSIGN_OR_RETURN(library_, CreateLibraryOp(*c_.library, c_.tensors, workspace_.bytes,
                                                  h_.module));
    return Status::Ok();
  }
  if (!module_status_.ok()) return module_status_.Context("loading the cubin");
  std::map<CUfunction, uint32_t> max_smem;
  launches_.resize(c_.launches.size());
  for (size_t k = 0; k < c_.launches.size(); ++k) {
    const LaunchJob& lj = c_.launches[k];
    PreparedLaunch& pl = launches_[k];
    pl.job = &lj;
    CUresult r = cuModuleGetFunction(&pl.f, module_, lj.kernel.c_str());
    if (r == CUDA_ERROR_NOT_FOUND) {
      return Status::Error("{}: kernel '{}' is not in the cubin (is it extern \"C\"?)",
                           LaunchName(k), lj.kernel);
    }
    if (r != CUDA_SUCCESS) return CuError(r, LaunchName(k) + ": cuModuleGetFunction");
    // Check the argument list against the kernel's parameters: the driver reads as many
    // parameters as the kernel has, whatever we pass.
    std::vector<size_t> sizes;
    bool known = true;
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      r = cuFuncGetParamInfo(pl.f, i, &offset, &size);
      if (r == CUDA_ERROR_NOT_SUPPORTED) known = false;  // old driver: trust the plan
      if (r != CUDA_SUCCESS) break;
      sizes.push_back(size);
    }
    if (known && sizes.size() != lj.args.size()) {
      return Status::Error("{}: the kernel takes {} parameters, the plan passes {}",
                           LaunchName(k), sizes.size(), lj.args.size());
    }
    for (size_t i = 0; known && i < sizes.size(); ++i) {
      const ArgJob::Kind kind = lj.args[i].kind;
      size_t want = kind == ArgJob::Kind::kI32         ? 4
                    : kind == ArgJob::Kind::kTensorMap ? sizeof(CUtensorMap)
                                                       : 8;
      if (sizes[i] != want) {
        return Status::Error("{}: parameter {} is {} bytes, the plan passes {} bytes",
                             LaunchName(k), i, sizes[i], want);
      }
    }
    pl.values.assign(sets_, std::vector<ArgSlot>(lj.args.size()));
    pl.params.assign(sets_, std::vector<void*>(lj.args.size()));
    for (int s = 0; s < sets_; ++s) {
      for (size_t i = 0; i < lj.args.size(); ++i) {
        const ArgJob& a = lj.args[i];
        ArgSlot& slot = pl.values[s][i];
        std::memset(slot.bytes, 0, sizeof(slot.bytes));
        // A tensor's buffer on input set s: each set's inputs live at their own addresses.
        auto buffer = [&](int t) {
          return c_.tensors[t].input ? inputs_[s][t].ptr : outputs_[t].ptr;
        };
        switch (a.kind) {
          case ArgJob::Kind::kTensor: {
            CUdeviceptr p = buffer(a.tensor);
            std::memcpy(slot.bytes, &p, sizeof(p));
            break;
          }
          case ArgJob::Kind::kWorkspace:
            std::memcpy(slot.bytes, &workspace_.ptr, sizeof(workspace_.ptr));
            break;
          case ArgJob::Kind::kI32: {
            int32_t v = static_cast<int32_t>(a.value);
            std::memcpy(slot.bytes, &v, sizeof(v));  // the driver reads the slot's first 4 bytes
            break;
          }
          case ArgJob::Kind::kI64: {
            int64_t v = a.value;
            std::memcpy(slot.bytes, &v, sizeof(v));
            break;
          }
          case ArgJob::Kind::kTensorMap: {
            // Encoded per input set, so a map of an input follows the rotation of input sets.
            Status e = EncodeTensorMap(a.encoding, buffer(a.tensor), slot.bytes);
            if (!e.ok()) {
              map_error_ = true;
              return Status::Error("{}: argument {}: tensor map '{}' of '{}' (input set {}): {}",
                                   LaunchName(k), i, a.map_name, c_.tensors[a.tensor].name, s,
                                   e.message());
            }
            break;
          }
        }
        pl.params[s][i] = slot.bytes;
      }
    }
    uint32_t& m = max_smem[pl.f];
    m = std::max(m, lj.smem);
    if (lj.clustered() && lj.cluster[0] * lj.cluster[1] * lj.cluster[2] > 8) {
      r = cuFuncSetAttribute(pl.f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
      if (r != CUDA_SUCCESS) return CuError(r, LaunchName(k) + ": allowing a non-portable cluster");
    }
  }
  // One kernel may appear in several launches: opt in to the largest dynamic smem it needs.
  for (size_t k = 0; k < launches_.size(); ++k) {
    uint32_t m = max_smem[launches_[k].f];
    if (m <= 48 * 1024 || launches_[k].job->smem != m) continue;
    CUresult r = cuFuncSetAttribute(launches_[k].f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    static_cast<int>(m));
    if (r != CUDA_SUCCESS) {
      return CuError(r, fmt::format("{}: opting in to {} bytes of dynamic shared memory",
                                    LaunchName(k), m));
    }
  }
  return Status::Ok();
}

// Poisons the outputs and zeroes the workspace when asked: before every run.
Status CaseRun::BeforeRun() {
  for (const auto& b : outputs_) {
    if (b.base && b.bytes > 0) {
      WS_CUDA_TRY(cuMemsetD8Async(b.ptr, c_.poison, static_cast<size_t>(b.bytes), dc_.stream));
    }
  }
  if (c_.workspace_zero && workspace_.bytes > 0) {
    WS_CUDA_TRY(cuMemsetD8Async(workspace_.ptr, 0, static_cast<size_t>(workspace_.bytes),
                                dc_.stream));
  }
  return Status::Ok();
}

// Launches the plan on input set `set`. With sync_each, synchronizes after each launch so a fault
// is pinned to its launch. Returns false after recording a launch error or a crash.
bool CaseRun::RunPlan(int set, const std::string& where, bool sync_each) {
  if (library_) return RunLibrary(set, where, sync_each);
  for (size_t k = 0; k < launches_.size(); ++k) {
    const PreparedLaunch& pl = launches_[k];
    const LaunchJob& lj = *pl.job;
    // A zero grid dimension means nothing to do (an empty shape); the driver would reject it.
    if (lj.grid[0] == 0 || lj.grid[1] == 0 || lj.grid[2] == 0) continue;
    CUlaunchConfig cfg = {};
    cfg.gridDimX = lj.grid[0];
    cfg.gridDimY = lj.grid[1];
    cfg.gridDimZ = lj.grid[2];
    cfg.blockDimX = lj.block[0];
    cfg.blockDimY = lj.block[1];
    cfg.blockDimZ = lj.block[2];
    cfg.sharedMemBytes = lj.smem;
    cfg.hStream = dc_.stream;
    CUlaunchAttribute attrs[2] = {};
    unsigned n_attrs = 0;
    if (lj.clustered()) {
      CUlaunchAttribute& a = attrs[n_attrs++];
      a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      a.value.clusterDim.x = lj.cluster[0];
      a.value.clusterDim.y = lj.cluster[1];
      a.value.clusterDim.z = lj.cluster[2];
    }
    if (lj.pdl && k > 0) {
      // The launch may start before the previous one on the stream has finished; the kernels
      // order themselves with griddepcontrol (cudaGridDependencySynchronize). Only between the
      // plan's own launches: before launch 0 the stream holds the runner's work (the poison, the
      // L2 flush, the start event), which a kernel must never overlap, even one that forgets
      // griddepcontrol.wait, and whose overlap would hide the plan's prologue from its timing.
      CUlaunchAttribute& a = attrs[n_attrs++];
      a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      a.value.programmaticStreamSerializationAllowed = 1;
    }
    if (n_attrs > 0) {
      cfg.attrs = attrs;
      cfg.numAttrs = n_attrs;
    }
    void** params = pl.params[set].empty() ? nullptr
                                           : const_cast<void**>(pl.params[set].data());
    CUresult r = cuLaunchKernelEx(&cfg, pl.f, params, nullptr);
    if (r != CUDA_SUCCESS) {
      // An earlier launch's fault can surface here: a broken context means a crash.
      CUresult sync = cuCtxSynchronize();
      if (sync != CUDA_SUCCESS) {
        Fail("crashed", fmt::format("{} at {}{}", CuErrorName(sync), LaunchName(k), where));
      } else {
        Fail("launch_error", fmt::format("{} at {}{}", CuErrorName(r), LaunchName(k), where));
      }
      return false;
    }
    if (sync_each) {
      r = cuStreamSynchronize(dc_.stream);
      if (r != CUDA_SUCCESS) {
        Fail("crashed", fmt::format("{} after {}{}", CuErrorName(r), LaunchName(k), where));
        return false;
      }
    }
  }
  return true;
}

// The library call of a library baseline on input set `set`; failures as in RunPlan.
bool CaseRun::RunLibrary(int set, const std::string& where, bool sync_each) {
  std::vector<CUdeviceptr> args;
  for (int t : c_.library->tensors) {
    args.push_back(c_.tensors[t].input ? inputs_[set][t].ptr : outputs_[t].ptr);
  }
  Status s = library_->Run(args, workspace_.ptr, workspace_.bytes, dc_.stream);
  if (s.ok() && sync_each) {
    if (CUresult r = cuStreamSynchronize(dc_.stream); r != CUDA_SUCCESS) {
      Fail("crashed", fmt::format("{} after the library call{}", CuErrorName(r), where));
      return false;
    }
  }
  if (!s.ok()) {
    FailOrCrash(s, "the library call" + where);
    return false;
  }
  return true;
}

Status CaseRun::LaunchGuardCheck() {
  if (region_labels_.empty()) return Status::Ok();
  long long gb = kGuardBytes;
  void* params[] = {&region_ptrs_, &region_salts_, &gb, &first_bad_};
  return LaunchHelper(h_.guard_check, dc_.stream, kGuardBytes, params,
                      static_cast<unsigned>(region_labels_.size()));
}

// Reads the accumulated guard results (synchronizes).
Status CaseRun::CollectGuards() {
  const size_t n = region_labels_.size();
  if (n == 0) return Status::Ok();
  std::vector<uint64_t> first(n);
  WS_CUDA_TRY(cuStreamSynchronize(dc_.stream));
  WS_CUDA_TRY(cuMemcpyDtoH(first.data(), first_bad_, n * sizeof(uint64_t)));
  for (size_t r = 0; r < n; ++r) {
    if (first[r] == ~uint64_t{0}) continue;
    if (guards_intact_) {
      // Regions alternate before/after; name the damaged byte's distance from the data.
      int64_t off = static_cast<int64_t>(first[r]);
      std::string where =
          r % 2 == 0 ? fmt::format("the farthest {} bytes before its start", kGuardBytes - off)
                     : fmt::format("the nearest at its end + {} bytes", off);
      std::string msg = fmt::format("{} was overwritten (damaged bytes: {})", region_labels_[r],
                                    where);
      if (status_ == "ok") Fail("guard_violation", msg);
    }
    guards_intact_ = false;
  }
  return Status::Ok();
}

// Writes each output of the run `tag` back: the outputs the job digests as a keyed digest in the
// result, the others as bytes to `<dump>.<tag>.<name>.bin` (only the sampled rows where the job's
// `sample` names the output and the run). Called only after the stream has
// synchronized, so the candidate's launches of this run have completed before the key is used.
void CaseRun::DumpOutputs(const std::string& tag) {
  for (size_t t = 0; t < c_.tensors.size(); ++t) {
    if (c_.tensors[t].input) continue;
    const std::string& name = c_.tensors[t].name;
    if (std::find(c_.digest.begin(), c_.digest.end(), static_cast<int>(t)) != c_.digest.end()) {
      auto d = DigestDevice(h_, dc_.stream, outputs_[t].ptr, outputs_[t].bytes, digest_key_,
                            hash_scratch_);
      if (!d.ok()) return FailOrCrash(d.status(), fmt::format("digesting output '{}'", name));
      digests_[tag][name] = Hex64((*d)[0]) + Hex64((*d)[1]);
      continue;
    }
    if (c_.dump.empty()) continue;
    const std::string path = fmt::format("{}.{}.{}.bin", c_.dump, tag, name);
    const SampleJob::Output* sampled = nullptr;
    if (c_.sample && c_.sample->Samples(tag)) {
      for (const auto& o : c_.sample->outputs) {
        if (o.tensor == static_cast<int>(t)) sampled = &o;
      }
    }
    CUresult r = CUDA_SUCCESS;
    if (sampled != nullptr) {
      // The rows are drawn here, after the run's launches completed (the stream has synchronized).
      const auto rows = SampledRows(c_.sample->key, outputs_[t].bytes / sampled->row_bytes,
                                    c_.sample->every);
      r = dump_writer_.WriteRows(path, outputs_[t].ptr, static_cast<size_t>(sampled->row_bytes),
                                 rows);
    } else {
      r = dump_writer_.Write(path, outputs_[t].ptr, static_cast<size_t>(outputs_[t].bytes));
    }
    if (r != CUDA_SUCCESS) {
      Fail("crashed", fmt::format("{} reading output '{}'", CuErrorName(r), name));
      return;
    }
  }
}

void CaseRun::DumpInputs() {
  if (c_.dump.empty()) return;
  for (size_t t = 0; t < c_.tensors.size(); ++t) {
    if (!c_.tensors[t].input) continue;
    const std::string& name = c_.tensors[t].name;
    CUresult r = dump_writer_.Write(fmt::format("{}.input.{}.bin", c_.dump, name),
                                    inputs_[0][t].ptr, static_cast<size_t>(inputs_[0][t].bytes));
    if (r != CUDA_SUCCESS) {
      Fail("crashed", fmt::format("{} reading input '{}'", CuErrorName(r), name));
      return;
    }
  }
}

void CaseRun::Timing() {
  const TimingJob& tj = *c_.timing;
  // The flush buffer is read, not written (see ws_l2_flush); +8 bytes hold the sink word.
  CUdeviceptr flush = 0;
  const size_t flush_words = static_cast<size_t>(tj.l2_flush_bytes / 16);
  if (flush_words > 0) {
    CUresult r = cuMemAlloc(&flush, flush_words * 16 + 16);
    if (r == CUDA_SUCCESS) r = cuMemsetD8Async(flush, 0, flush_words * 16 + 16, dc_.stream);
    if (r != CUDA_SUCCESS) return FailOrCrash(CuError(r, "cuMemAlloc"), "the L2 flush buffer");
    plain_allocs_.push_back(flush);
  }
  CUdeviceptr flush_sink = flush + flush_words * 16;
  long long flush_n = static_cast<long long>(flush_words);
  void* flush_params[] = {&flush, &flush_n, &flush_sink};
  std::vector<CUevent> start(tj.iterations, nullptr), stop(tj.iterations, nullptr);
  // With `graph`, each input set's launches are captured once and every run replays the graph,
  // so launch gaps between a plan's kernels do not count against it.
  std::vector<CUgraph> graphs;
  std::vector<CUgraphExec> execs;
  auto destroy = [&] {
    for (CUevent e : start) {
      if (e) cuEventDestroy(e);
    }
    for (CUevent e : stop) {
      if (e) cuEventDestroy(e);
    }
    for (CUgraphExec e : execs) {
      if (e) cuGraphExecDestroy(e);
    }
    for (CUgraph g : graphs) {
      if (g) cuGraphDestroy(g);
    }
  };
  if (tj.graph) {
    for (int set = 0; set < sets_; ++set) {
      CUgraph g = nullptr;
      CUgraphExec e = nullptr;
      CUresult r = cuStreamBeginCapture(dc_.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
      if (r != CUDA_SUCCESS) {
        destroy();
        return FailOrCrash(CuError(r, "cuStreamBeginCapture"), "capturing the plan");
      }
      const bool launched = RunPlan(set, fmt::format(", capturing input set {}", set), false);
      r = cuStreamEndCapture(dc_.stream, &g);
      graphs.push_back(g);
      if (!launched) return destroy();
      if (r == CUDA_SUCCESS) r = cuGraphInstantiate(&e, g, 0);
      execs.push_back(e);
      if (r != CUDA_SUCCESS) {
        destroy();
        return FailOrCrash(CuError(r, "capturing the plan as a CUDA graph"), "capturing the plan");
      }
    }
  }
  for (int i = 0; i < tj.iterations; ++i) {
    CUresult r = cuEventCreate(&start[i], CU_EVENT_DEFAULT);
    if (r == CUDA_SUCCESS) r = cuEventCreate(&stop[i], CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) {
      destroy();
      return FailOrCrash(CuError(r, "cuEventCreate"), "creating timing events");
    }
  }
  const int last = tj.iterations - 1;
  // Warm-up runs: tj.warmup, then more (synchronized) until tj.warmup_ms of wall time has passed.
  const auto warm_start = std::chrono::steady_clock::now();
  int warm_runs = tj.warmup;
  for (int run = 0; run < warm_runs + tj.iterations; ++run) {
    const int it = run - warm_runs;  // timed iteration, negative during warm-up
    const int set = (it >= 0 ? it : run) % sets_;
    const std::string where = it >= 0 ? fmt::format(", timed run {}", it)
                                      : fmt::format(", warm-up run {}", run);
    const bool checked = it == tj.audit_iteration || it == last;
    Status s = Status::Ok();
    std::vector<uint64_t> fresh_hashes;  // a checked run's fresh inputs, before it
    if (tj.fresh_seed) {
      s = GenerateSet(set, FreshRunSeed(*tj.fresh_seed, it >= 0 ? it : -1 - run));
      if (s.ok() && checked) {
        auto h = HashSet(set);
        if (h.ok()) fresh_hashes = std::move(*h);
        s = h.status();
      }
    }
    if (s.ok()) s = BeforeRun();
    if (s.ok() && flush_words > 0) {
      // Reading several times the L2 evicts whatever the previous run left there.
      s = LaunchHelper(h_.l2_flush, dc_.stream, flush_n, flush_params);
    }
    if (s.ok()) {
      CUresult r = cuCtxResetPersistingL2Cache();
      if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_SUPPORTED) {
        s = CuError(r, "cuCtxResetPersistingL2Cache");
      }
    }
    if (s.ok() && it >= 0) {
      CUresult r = cuEventRecord(start[it], dc_.stream);
      if (r != CUDA_SUCCESS) s = CuError(r, "cuEventRecord");
    }
    if (!s.ok()) {
      destroy();
      return FailOrCrash(s, "before" + where.substr(1));
    }
    if (tj.graph) {
      CUresult r = cuGraphLaunch(execs[set], dc_.stream);
      if (r != CUDA_SUCCESS) {
        destroy();
        return FailOrCrash(CuError(r, "cuGraphLaunch"), "at" + where.substr(1));
      }
    } else if (!RunPlan(set, where, false)) {
      return destroy();
    }
    if (it >= 0) {
      CUresult r = cuEventRecord(stop[it], dc_.stream);
      if (r != CUDA_SUCCESS) s = CuError(r, "cuEventRecord");
    }
    if (s.ok()) s = LaunchGuardCheck();
    // Checked runs (the audited and the last) and the last warm-up run of a time-based warm-up
    // wait for the stream.
    const bool warm_end = it < 0 && run == warm_runs - 1 && tj.warmup_ms > 0;
    if (s.ok() && (checked || warm_end)) {
      CUresult r = cuStreamSynchronize(dc_.stream);
      if (r != CUDA_SUCCESS) {
        Fail("crashed", fmt::format("{} during{}", CuErrorName(r), where.substr(1)));
        return destroy();
      }
    }
    if (s.ok() && checked && !fresh_hashes.empty()) {
      // Fresh inputs: the run's own inputs must be as generated (the setup's hashes no longer
      // describe the sets).
      auto after = HashSet(set);
      s = after.status();
      for (size_t t = 0; s.ok() && t < fresh_hashes.size(); ++t) {
        if ((*after)[t] == fresh_hashes[t]) continue;
        if (inputs_unchanged_ && status_ == "ok") {
          message_ = fmt::format("input '{}' changed during {}", c_.tensors[t].name,
                                 where.substr(2));
        }
        inputs_unchanged_ = false;
      }
    }
    if (s.ok() && checked) {
      s = CollectGuards();
      if (s.ok() && it == tj.audit_iteration) {
        DumpOutputs("audit");
        dumps_["audit"] = {{"set", set}, {"iteration", it}};
      }
      if (s.ok() && it == last) {
        DumpOutputs("last");
        dumps_["last"] = {{"set", set}, {"iteration", it}};
      }
    }
    if (s.ok() && warm_end) {  // not warm yet: one more warm-up run
      const double ms = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - warm_start).count();
      if (ms < tj.warmup_ms) ++warm_runs;
    }
    if (!s.ok()) {
      destroy();
      return FailOrCrash(s, "after" + where.substr(1));
    }
    if (crashed()) return destroy();
  }
  ojson times = ojson::array();
  std::vector<double> us(tj.iterations);
  for (int i = 0; i < tj.iterations; ++i) {
    float ms = 0;
    CUresult r = cuEventElapsedTime(&ms, start[i], stop[i]);
    if (r != CUDA_SUCCESS) {
      destroy();
      return FailOrCrash(CuError(r, "cuEventElapsedTime"), "reading the timing events");
    }
    us[i] = static_cast<double>(ms) * 1000.0;
    times.push_back(us[i]);
  }
  destroy();
  TimingStats st = ComputeStats(us);
  timing_ = {{"iterations", tj.iterations}, {"warmup_runs", warm_runs}, {"graph", tj.graph},
             {"times_us", times},
             {"median_us", st.median_us},   {"min_us", st.min_us},
             {"p90_us", st.p90_us},         {"mean_us", st.mean_us},
             {"stdev_us", st.stdev_us}};
}

ojson CaseRun::Run() {
  // Where the case's wall time goes (the evaluator sums these into phase_seconds).
  using Clock = std::chrono::steady_clock;
  auto mark = Clock::now();
  ojson seconds = ojson::object();
  const auto lap = [&](const char* name) {
    const auto now = Clock::now();
    seconds[name] = std::chrono::duration<double>(now - mark).count();
    mark = now;
  };
  Status s = Setup();
  if (!s.ok()) {
    FailOrCrash(s, "setting up the case");
  } else if (Status p = PrepareLaunches(); !p.ok()) {
    Fail(map_error_ ? "plan_error" : "launch_error", p.message());
  } else {
    lap("setup");
    // 3. The check run.
    s = BeforeRun();
    if (!s.ok()) {
      FailOrCrash(s, "before the check run");
    } else if (RunPlan(0, "", true)) {
      s = LaunchGuardCheck();
      if (s.ok()) s = CollectGuards();
      if (!s.ok()) {
        FailOrCrash(s, "checking guards after the check run");
      } else {
        lap("check_run");
        DumpOutputs("check");
        if (c_.dump_inputs) DumpInputs();
        if (!crashed()) dumps_["check"] = {{"set", 0}};
        lap("dump");
      }
    }
  }
  // 5. Inputs re-hashed (whenever the context still works): after the timing, or before it where
  // the timing regenerates them (fresh inputs; it checks its checked runs' own inputs).
  ojson input_hashes = ojson::object();
  const bool fresh = c_.timing && c_.timing->fresh_seed;
  auto rehash = [&] {
    if (crashed() || hashes_before_.size() != static_cast<size_t>(sets_) * c_.tensors.size()) {
      return;
    }
    auto after = HashInputs();
    if (!after.ok()) return FailOrCrash(after.status(), "re-hashing the inputs");
    CompareInputHashes(*after, &input_hashes);
  };
  if (fresh) {
    rehash();
    lap("rehash");
  }
  // 4. Timing, only for a case whose check run went cleanly.
  if (status_ == "ok" && c_.timing && !crashed()) {
    Timing();
    lap("timing");
  }
  if (!fresh) {
    rehash();
    lap("rehash");
  }
  ojson out = {{"id", c_.id},
               {"status", status_},
               {"message", message_},
               {"guards_intact", guards_intact_},
               {"inputs_unchanged", inputs_unchanged_},
               {"dumps", dumps_},
               {"digests", digests_},
               {"timing", timing_},
               {"input_hashes", input_hashes},
               {"seconds", seconds}};
  if (library_) out["library"] = library_->Describe();
  return out;
}

}  // namespace

int RunCommand(const std::string& job_path) {
  using Clock = std::chrono::steady_clock;
  const auto t_start = Clock::now();
  auto text = ReadFile(job_path);
  if (!text.ok()) {
    std::fprintf(stderr, "ws_runner: bad job: %s\n", text.status().message().c_str());
    return kExitBadJob;
  }
  auto job = ParseJob(*text);
  if (!job.ok()) {
    std::fprintf(stderr, "ws_runner: bad job %s: %s\n", job_path.c_str(),
                 job.status().message().c_str());
    return kExitBadJob;
  }
  std::error_code ec;
  // A job of library calls only (a library baseline) has no cubin.
  if (!job->cubin.empty() && !std::filesystem::is_regular_file(job->cubin, ec)) {
    std::fprintf(stderr, "ws_runner: bad job: the cubin %s does not exist\n", job->cubin.c_str());
    return kExitBadJob;
  }
  DeviceContext device;
  Helpers helper_kernels;
  if (int rc = OpenDeviceWithHelpers(&device, &helper_kernels); rc != kExitOk) return rc;
  DeviceContext* dc = &device;
  Helpers* helpers = &helper_kernels;
  // A cubin that does not load (wrong architecture, corrupt) fails every case as a launch error.
  CUmodule module = nullptr;
  Status module_status;
  auto load_module = [&] {
    if (job->cubin.empty()) {
      module_status = Status::Error("the job has no cubin");
    } else if (CUresult r = cuModuleLoad(&module, job->cubin.c_str()); r != CUDA_SUCCESS) {
      module_status = CuError(r, "cuModuleLoad(" + job->cubin + ")");
    }
  };
  // Behind a turn gate the cubin waits for the turn: nothing of the candidate's reaches the GPU
  // while the reference runs.
  if (job->turn.empty()) load_module();
  // Canary salts come from outside the job, so a kernel cannot forge the guard pattern.
  std::random_device rd;
  uint64_t salt = (static_cast<uint64_t>(rd()) << 32) ^ rd();

  // Shared with the watchdog, which may add the case it stops while this thread is blocked in
  // the driver. This thread takes the file's lock only to write it, never around a GPU call.
  ResultFile results(job->result, dc->props.ToJson());
  if (Status w = results.Write(); !w.ok()) HostFailure(w.message());
  // Alone on the GPU from here to the end (evaluator/gpu_lock.h); start-up above needs no
  // exclusivity. The case budgets start after the wait. The lock is held until the process
  // ends, so the next runner starts after this one's context is gone.
  const auto t_ready = Clock::now();
  if (!job->turn.empty()) {
    auto turn = FileLock::Acquire(job->turn, job->turn_wait_s);
    if (!turn.ok()) {
      std::fprintf(stderr, "ws_runner: no turn: %s\n", turn.status().message().c_str());
      return kExitNoTurn;
    }
    auto word = ReadFile(job->turn);
    if (!word.ok() || *word != kTurnGo) {
      std::fprintf(stderr, "ws_runner: no turn: the gate reads '%s'\n",
                   word.ok() ? word->substr(0, 16).c_str() : word.status().message().c_str());
      return kExitNoTurn;
    }
    load_module();
  }
  if (!job->gpu_lock.empty()) {
    auto locked = FileLock::Acquire(job->gpu_lock, job->gpu_lock_wait_s);
    if (!locked.ok()) {
      std::fprintf(stderr, "ws_runner: the GPU stayed busy: %s\n", locked.status().message().c_str());
      return kExitGpuBusy;
    }
    locked->HoldUntilExit();
  }
  // Where the process's time went before its first case (the evaluator's phase_seconds).
  const auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  if (Status w = results.Set("seconds", {{"startup", seconds(t_ready - t_start)},
                                         {"gpu_wait", seconds(Clock::now() - t_ready)}});
      !w.ok()) {
    HostFailure(w.message());
  }
  // A case that outlives its budget_s (a kernel that never returns) ends the process here, at
  // about its own allowance, instead of at the sandbox's limit for the whole job.
  CaseWatchdog watchdog(kCaseGraceSeconds, [&results](const std::string& id, double allowance_s) {
    StopCaseAndExit(&results, id, allowance_s, kCaseGraceSeconds);
  });
  for (size_t i = 0; i < job->cases.size(); ++i) {
    const CaseJob& cj = job->cases[i];
    ojson case_result;
    bool crashed = false;
    if (cj.budget_s) watchdog.Arm(cj.id, *cj.budget_s);
    const auto t_case = Clock::now();
    {
      CaseRun run(*dc, *helpers, module, module_status, cj,
                  ws_mix64(salt + i * 0xD6E8FEB86659FD93ull), job->digest_key.value_or(0));
      case_result = run.Run();
      crashed = run.crashed();
    }
    // After this the watchdog can no longer stop this case, so its own result is the one kept.
    watchdog.Disarm();
    // The whole case, its buffers' release included.
    case_result["seconds"]["total"] = seconds(Clock::now() - t_case);
    const std::string message = case_result.value("message", "");
    if (Status w = results.Append(std::move(case_result)); !w.ok()) HostFailure(w.message());
    if (crashed) {
      std::fprintf(stderr, "ws_runner: case %s crashed: %s\n", cj.id.c_str(), message.c_str());
      return kExitCrashed;
    }
  }
  return kExitOk;
}

}  // namespace ws::runner
