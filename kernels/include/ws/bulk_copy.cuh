// warpsmith device library: 1-D bulk copies (cp.async.bulk, the TMA engine without a tensor map)
// from global into shared memory, completing on an mbarrier. sm_90a and sm_100a. Addresses are
// 32-bit shared addresses (__cvta_generic_to_shared).
#pragma once

namespace ws {

/// Initializes the mbarrier at bar for `count` arrivals and makes it visible to the async proxy
/// (the bulk copies' complete_tx); all threads must sync before anyone waits on it.
__device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/// One arrival that also expects `bytes` of bulk-copy transactions before the phase completes.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

/// Spins until the phase with the given parity has completed.
__device__ __forceinline__ void mbarrier_wait_parity(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

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
