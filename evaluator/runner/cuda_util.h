// CUDA driver helpers for the runner: error Status, device properties, and the runner's own
// kernels (problems/init.h plus runner_kernels.cu): cubins built in for Hopper and Blackwell
// (NVRTC at build time), else compiled by NVRTC for the device at start.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <cuda.h>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "problems/init.h"

namespace ws::runner {

/// "CUDA_ERROR_OUT_OF_MEMORY" (or "CUresult 999" when the driver does not know it).
std::string CuErrorName(CUresult r);

/// A failed Status naming the error and the call: "CUDA_ERROR_X in cuMemAlloc(...)".
Status CuError(CUresult r, std::string_view what);

/// Evaluates a driver call; on failure returns a Status naming the error and the call.
#define WS_CUDA_TRY(expr)                                                    \
  do {                                                                       \
    CUresult ws_cu_r_ = (expr);                                              \
    if (ws_cu_r_ != CUDA_SUCCESS) return ::ws::runner::CuError(ws_cu_r_, #expr); \
  } while (0)

struct DeviceProps {
  int ordinal = 0;
  std::string name;
  int cc = 0;            // 90 for 9.0
  std::string arch;      // "sm_90a"
  std::string driver;    // "580.159.04", or the CUDA version "13.0" when the module's is unknown
  int num_sms = 0;
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;
  int max_threads_per_block = 0;
  int64_t max_smem_per_block = 0;  // opt-in maximum
  int64_t max_grid[3] = {0, 0, 0};
  nlohmann::ordered_json ToJson() const;
};

/// Reads a device's properties (cuInit must have succeeded).
Result<DeviceProps> QueryDevice(int ordinal);

/// A primary context made current on one device, with one non-blocking stream.
struct DeviceContext {
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  DeviceProps props;
};

/// cuInit, device `ordinal`, its primary context and a stream. The error says why no GPU is usable.
Result<DeviceContext> OpenDevice(int ordinal);

struct Helpers;

/// Opens device 0 and loads the helper kernels into it. On failure prints why on stderr and
/// returns the exit status for it (no GPU, or our own failure); 0 on success.
int OpenDeviceWithHelpers(DeviceContext* dc, Helpers* helpers);

/// The runner's own kernels, loaded into the current context.
struct Helpers {
  CUmodule module = nullptr;
  CUfunction generate = nullptr;     // ws_generate
  CUfunction hash = nullptr;         // ws_hash
  CUfunction digest = nullptr;       // ws_digest
  CUfunction guard_fill = nullptr;   // ws_guard_fill
  CUfunction guard_check = nullptr;  // ws_guard_check
  CUfunction l2_flush = nullptr;     // ws_l2_flush
};

/// Compiles the embedded sources with NVRTC for compute capability `cc` and loads them.
Result<Helpers> LoadHelpers(int cc);

/// Fills `numel` elements at `out` with generated values (see problems/init.h).
Status Generate(const Helpers& h, CUstream s, CUdeviceptr out, int64_t numel, int dtype,
                const WsInitParams& init, uint64_t seed, int tensor_index);
/// The same for the distributions with two float parameters.
Status Generate(const Helpers& h, CUstream s, CUdeviceptr out, int64_t numel, int dtype, int dist,
                float p0, float p1, uint64_t seed, int tensor_index);

/// Order-independent 64-bit checksum of `bytes` bytes at `p` (8-byte aligned). Synchronizes.
/// `scratch` is one device word.
Result<uint64_t> HashDevice(const Helpers& h, CUstream s, CUdeviceptr p, int64_t bytes,
                            CUdeviceptr scratch);

/// The keyed 128-bit digest (evaluator/runner/digest.h) of `bytes` bytes at `p` (8-byte aligned)
/// under `key`: {lane 0, lane 1}. Call it only once the work that wrote `p` has completed: the key
/// must reach no other kernel. Synchronizes. `scratch` is two device words.
Result<std::array<uint64_t, 2>> DigestDevice(const Helpers& h, CUstream s, CUdeviceptr p,
                                             int64_t bytes, uint64_t key, CUdeviceptr scratch);

/// Launches a 1-D helper kernel with `params` over a grid sized for `work` items.
Status LaunchHelper(CUfunction f, CUstream s, int64_t work, void** params, unsigned grid_y = 1);

}  // namespace ws::runner
