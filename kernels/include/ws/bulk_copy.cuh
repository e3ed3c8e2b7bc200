// warpsmith device library: 1-D bulk copies (cp.async.bulk, the TMA engine without a tensor map)
// from global into shared memory, completing on an mbarrier (the mbarrier wrappers are
// ws/ptx_sm90.cuh's). sm_90a and sm_100a. Addresses are 32-bit shared addresses
// (__cvta_generic_to_shared).
#pragma once

#include "ws/ptx_sm90.cuh"

namespace ws {

/// Copies `bytes` from global src to shared dst, counted on bar's transactions.
/// NOTE: both addresses 16-byte aligned and bytes % 16 == 0, else the copy faults.
__device__ __forceinline__ void bulk_load_1d(unsigned dst, const void* src, unsigned bytes,
                                             unsigned bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}

}  // namespace ws
