// warpsmith device library: the sm_90 asynchronous machinery that Hopper and Blackwell GEMMs share:
// shared-memory addresses, mbarriers, TMA tiled loads from plan tensor maps, register reallocation.
// Every wrapper is one PTX instruction (or a try_wait spin) with the memory clobber the pipeline
// relies on; nothing here changes numerics.
#pragma once

namespace ws {

typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef unsigned short uint16_t;

/// The driver's CUtensorMap: an opaque 128-byte, 64-byte aligned blob that a plan's `tensor_maps`
/// entry passes by value (`const __grid_constant__ TensorMap`). NVRTC cannot include <cuda.h>.
struct alignas(64) TensorMap {
  unsigned long long v[16];
};

/// The 32-bit shared-window address of a pointer into shared memory.
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier (bar: a shared-window address, 8-byte aligned) ----

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
/// Makes the inits visible to the async proxy (TMA) and the other threads; once, after the inits.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
/// mbar_init then fence_mbarrier_init, for a kernel that inits one barrier and syncs before use.
/// NOTE: this init clobbers memory and mbar_init does not: each keeps the SASS its kernels (the
/// bulk-copy quantizers, the GEMMs) were verified with.
__device__ __forceinline__ void mbar_init_fenced(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
  fence_mbarrier_init();
}
/// Arrives once and adds bytes to the transaction count the phase waits for.
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
/// Arrives on the barrier at shared offset bar of cluster CTA rank (a consumer freeing a stage:
/// it publishes no data, so no cluster-scope release fence).
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(bar), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote)
               : "memory");
}
/// Spins until the phase with this parity has completed (parity 1 on a fresh barrier passes).
/// Debugging a hang: a kernel that defines WS_WAIT_TRACE before its includes gets waits that,
/// still spinning after 2^32 clocks (2-3 s), print the barrier's shared address, the parity and
/// the thread, then trap (as a failed assert does: the launch fails, the print is flushed). Run
/// the kept candidate job (`eval --keep-scratch`, then `ws_runner run JOB`) to read the prints.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
#ifdef WS_WAIT_TRACE
  const long long t0 = clock64();
  for (;;) {
    uint32_t done;
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done) return;
    if (clock64() - t0 > (1ll << 32)) {
      printf("ws: mbar_wait stuck: shared 0x%x parity %u block %u thread %u\n", bar, parity,
             blockIdx.x, threadIdx.x);
      __trap();
    }
  }
#else
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#endif
}

/// Inits kCount pairs of ring barriers 8 bytes apart: full + 8s for full_count arrivals, empty + 8s
/// for empty_count (call fence_mbarrier_init after the last init).
template <int kCount>
__device__ __forceinline__ void mbar_init_ring(uint32_t full, uint32_t full_count, uint32_t empty,
                                               uint32_t empty_count) {
  for (int s = 0; s < kCount; ++s) {
    mbar_init(full + 8 * s, full_count);
    mbar_init(empty + 8 * s, empty_count);
  }
}

/// Lets the plan's next launch (pdl) start once every CTA of this grid has issued this or exited.
/// It orders no memory: the dependent grid reads nothing this one writes without its own
/// synchronization (griddepcontrol.wait).
__device__ __forceinline__ void griddep_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

/// Waits until the grids this one depends on (the plan's previous launch, under pdl) have
/// completed and their writes are visible; returns at once for a launch without pdl.
__device__ __forceinline__ void griddep_wait() {
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

/// Orders this thread's generic-proxy writes to shared memory before later async-proxy reads of it
/// (wgmma / tcgen05 operands, TMA stores); issue it before the arrive that publishes the data.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/// Orders this thread's generic-proxy writes to global memory before async-proxy accesses (TMA,
/// bulk copies) ordered after it: the writer's side before a release, the reader's after an
/// acquire, when one CTA's stores feed another CTA's bulk copies.
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}

/// A gpu-scope acquire load and release add on a global counter (cross-CTA hand-offs).
__device__ __forceinline__ unsigned ld_acquire_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void red_release_gpu_add(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

/// Named barrier id (1..15) over count threads (a multiple of 32).
__device__ __forceinline__ void named_bar_sync(uint32_t id, uint32_t count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// ---- TMA ----

__device__ __forceinline__ void tma_prefetch(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
/// Box at (c0 innermost, c1) of map into dst, completing its bytes on bar (out-of-bounds parts
/// are filled with the map's oob_fill and still counted).
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const TensorMap* map, uint32_t bar,
                                            int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}
/// tma_load_2d into the same shared offset of every CTA of the cluster in cta_mask (bit r: rank r),
/// completing the bytes on the barrier at the same offset in each.
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const TensorMap* map,
                                                      uint32_t bar, int c0, int c1,
                                                      uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "h"(cta_mask)
      : "memory");
}
/// Box at (c0 innermost, c1, c2) of a 3-D map (e.g. (K, N, E): tails of N zero-filled per expert).
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const TensorMap* map, uint32_t bar,
                                            int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// ---- bulk (non-tensor) stores: shared -> global, tracked per thread in bulk groups ----

/// Copies bytes (a multiple of 16; both addresses 16-byte aligned) from shared src to global dst
/// through the async proxy; publish src's generic writes first (fence_proxy_async_shared + a
/// barrier), then bulk_commit_group.
__device__ __forceinline__ void bulk_store_1d(void* dst, uint32_t src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(
                   reinterpret_cast<uint64_t>(dst)),
               "r"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_commit_group() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
/// Waits until at most N of this thread's bulk groups still read their shared source.
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
/// Waits until at most N of this thread's bulk groups are pending (writes done).
template <int N>
__device__ __forceinline__ void bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

// ---- warpgroup register reallocation (sm_90+; every thread of the warpgroup executes it) ----

template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

/// Pins the registers' reads and writes after the preceding asm (a wgmma or tcgen05 wait), so the
/// compiler cannot move uses of an asynchronously written accumulator above it.
template <int R>
__device__ __forceinline__ void fence_operands(float (&r)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

}  // namespace ws
