// warpsmith device library: Blackwell tensor-core MMA (tcgen05, sm_100a only), cta_group::1:
// tensor-memory allocation, shared-memory and instruction descriptors, MMA issue and commit,
// tensor-memory loads, and the fences that order them against thread synchronization.
// TMEM addresses are lane << 16 | column; warp w of a warpgroup may access lanes 32*(w%4)..+31.
#pragma once

#include "ws/ptx_sm90.cuh"

namespace ws {

// ---- allocation (one warp allocates and deallocates; columns a power of two >= 32) ----

/// Allocates columns of tensor memory and writes the base address to the shared word at slot.
__device__ __forceinline__ void tmem_alloc(uint32_t slot, uint32_t columns) {
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;\n" ::"r"(slot),
               "r"(columns)
               : "memory");
}
/// Lets other CTAs on the SM allocate; after this CTA's last alloc.
__device__ __forceinline__ void tmem_relinquish_alloc_permit() {
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void tmem_dealloc(uint32_t base, uint32_t columns) {
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;\n" ::"r"(base), "r"(columns)
               : "memory");
}
/// The base address tmem_alloc wrote to slot (after the fences and barrier that publish it).
__device__ __forceinline__ uint32_t tmem_base_at(uint32_t slot) {
  uint32_t base;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(base) : "r"(slot) : "memory");
  return base;
}
/// The smallest legal allocation (a power of two, at least 32) holding columns.
constexpr int tmem_columns(int columns) {
  int c = 32;
  while (c < columns && c < 512) c *= 2;
  return c;
}

// ---- fences around thread synchronization ----

__device__ __forceinline__ void tc_fence_after() {
  asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");
}
__device__ __forceinline__ void tc_fence_before() {
  asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");
}

// ---- a kernel's accumulators: allocated by one warp, published to the CTA, freed at the end ----

/// Every thread of the CTA: the owner warp allocates columns at slot, the CTA syncs, and each
/// thread returns the base address.
__device__ __forceinline__ uint32_t tmem_alloc_cta(bool owner, uint32_t slot, uint32_t columns) {
  if (owner) {
    tmem_alloc(slot, columns);
    tmem_relinquish_alloc_permit();
  }
  tc_fence_before();
  __syncthreads();
  tc_fence_after();
  return tmem_base_at(slot);
}
/// Every thread of the CTA, after its role loop: the CTA syncs, then the owner warp frees base.
__device__ __forceinline__ void tmem_free_cta(bool owner, uint32_t base, uint32_t columns) {
  __syncwarp();  // lanes that skipped a role loop rejoin before the CTA barrier
  tc_fence_before();
  __syncthreads();
  if (owner) {
    tc_fence_after();
    tmem_dealloc(base, columns);
  }
}

// ---- descriptors ----

/// tcgen05 shared-memory descriptor of a 128-byte-swizzled operand, 8-row groups 1024 B apart:
/// the wgmma fields plus version 1 at [46,48) and layout [61,64) 2 = SWIZZLE_128B.
/// K-major: LBO unused (16). MN-major: LBO = distance between 64-element MN chunks.
template <uint32_t kLboBytes = 16>
__device__ __forceinline__ uint64_t umma_desc_sw128(uint32_t addr) {
  uint64_t d = (addr & 0x3FFFF) >> 4;   // start address
  d |= uint64_t(kLboBytes >> 4) << 16;  // leading byte offset
  d |= uint64_t(1024 >> 4) << 32;       // stride byte offset: next 8-row group
  d |= uint64_t(1) << 46;               // descriptor version (sm_100)
  d |= uint64_t(2) << 61;               // SWIZZLE_128B
  return d;
}

/// Instruction descriptor, kind::f16 / kind::f8f6f4 (dense, fp32 D): D format [4,6) = 1 (f32),
/// A format [7,10), B format [10,13) (kind::f16: 1 = bf16; kind::f8f6f4: 0 = E4M3), MN-major bits
/// 15 (A) and 16 (B), N>>3 at [17,23), M>>4 at [24,29).
constexpr uint32_t umma_idesc(uint32_t a_fmt, uint32_t b_fmt, int trans_a, int trans_b, int m,
                              int n) {
  return (1u << 4) | (a_fmt << 7) | (b_fmt << 10) | (uint32_t(trans_a) << 15) |
         (uint32_t(trans_b) << 16) | (uint32_t(n >> 3) << 17) | (uint32_t(m >> 4) << 24);
}
constexpr uint32_t kUmmaBf16 = 1, kUmmaE4M3 = 0;

// ---- MMA ----

/// D (TMEM) = A * B^T + (accumulate ? D : 0), bf16/f16 inputs (kind::f16), one thread issues.
__device__ __forceinline__ void umma_f16(uint32_t d_tmem, uint64_t da, uint64_t db, uint32_t idesc,
                                         uint32_t accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
      "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n}\n" ::"r"(d_tmem),
      "l"(da), "l"(db), "r"(idesc), "r"(accumulate));
}
/// As umma_f16 for 8/6/4-bit inputs without block scales (kind::f8f6f4).
__device__ __forceinline__ void umma_f8f6f4(uint32_t d_tmem, uint64_t da, uint64_t db,
                                            uint32_t idesc, uint32_t accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
      "tcgen05.mma.cta_group::1.kind::f8f6f4 [%0], %1, %2, %3, p;\n}\n" ::"r"(d_tmem),
      "l"(da), "l"(db), "r"(idesc), "r"(accumulate));
}
/// Arrives once on bar when every tcgen05.mma this thread issued so far has completed.
__device__ __forceinline__ void umma_commit(uint32_t bar) {
  asm volatile(
      "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];\n" ::"r"(bar)
      : "memory");
}

// ---- tensor-memory loads ----

/// 32 lanes x 32 columns of 32-bit words: this thread's lane (row), 32 consecutive columns;
/// waits for the load.
__device__ __forceinline__ void tmem_ld32(uint32_t taddr, uint32_t (&r)[32]) {
  asm volatile(
      "tcgen05.ld.sync.aligned.32x32b.x32.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
      "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, "
      "%30, %31}, [%32];\n"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]),
        "=r"(r[7]), "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]),
        "=r"(r[14]), "=r"(r[15]), "=r"(r[16]), "=r"(r[17]), "=r"(r[18]), "=r"(r[19]), "=r"(r[20]),
        "=r"(r[21]), "=r"(r[22]), "=r"(r[23]), "=r"(r[24]), "=r"(r[25]), "=r"(r[26]), "=r"(r[27]),
        "=r"(r[28]), "=r"(r[29]), "=r"(r[30]), "=r"(r[31])
      : "r"(taddr));
  asm volatile("tcgen05.wait::ld.sync.aligned;\n" ::: "memory");
}

}  // namespace ws
