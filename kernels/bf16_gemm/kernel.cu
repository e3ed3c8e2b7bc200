/* warpsmith:plan
{ "knobs": { "BN": [256, 128, 192, 64], "STAGES": [4, 5, 3, 6], "GROUP_M": [8, 16, 4, 1] },
  "tensor_maps": {
    "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": ["64", "128"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "tma_b": { "tensor": "b", "dims": ["K", "N"], "box": ["64", "BN"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 } },
  "launch": [ { "kernel": "sm90_sm100_bf16_gemm_tma",
                "grid": ["min(num_sms, ceil_div(M, 128) * ceil_div(N, BN))"],
                "block": ["384"],
                "smem": "min(STAGES, 230400 / (16384 + 128 * BN)) * (16384 + 128 * BN) + 2048",
                "args": ["tma_a", "tma_b", "d", "M", "N", "K"] } ] }
*/
// Dense BF16 GEMM, hand-tuned: d [M,N] = a [M,K] * b [N,K]^T, bf16 in and out, fp32 accumulation.
//
// Design (one kernel, one launch, every shape; the body is chosen by __CUDA_ARCH__):
//  - Tiles: 128 x BN output tiles, k-blocks of 64 bf16 (128 bytes: one 128-byte swizzle row).
//    A and B are both K-major, so each operand tile is rows of 128 bytes, loaded by TMA with the
//    128-byte swizzle (8-row atoms of 1024 bytes), the layout wgmma / tcgen05 read with
//    "K-major, SWIZZLE_128B" descriptors; a k16 step advances the descriptor start by 32 bytes.
//    TMA zero-fills out-of-bounds rows and k (M, N and K tails); stores are masked.
//  - Pipeline: a ring of STAGES shared-memory stages (A 16 KiB + B BN*128 B each), a "full"
//    mbarrier per stage (TMA transaction bytes) and an "empty" one (released by the MMA side).
//    STAGES is capped so the ring fits in 227 KiB (the plan's smem uses the same cap).
//  - Persistent: grid = min(num_sms, tiles); CTA c takes tiles c, c + grid, ... in a grouped order
//    (GROUP_M row-tiles share each column sweep) so concurrent CTAs reuse A and B in L2.
//  - sm_90a: warpgroup 0 is the producer (one thread issues TMA; setmaxnreg.dec to 40),
//    warpgroups 1 and 2 are consumers (setmaxnreg.inc to 232), each owning 64 rows x BN of the
//    tile in registers (BN/2 fp32 per thread) and issuing wgmma m64nBNk16 (4 per k-block), one
//    commit group per k-block; wait_group(1) lets a stage be released while the next one's
//    wgmmas run. Epilogue: fp32 -> bf16 pairs stored directly from the accumulator layout.
//  - sm_100a: warp 0 issues TMA, warp 1 (one thread) issues tcgen05.mma (cta_group::1,
//    M=128, N=BN, K=16) into a double-buffered fp32 accumulator in tensor memory (2*BN columns),
//    tcgen05.commit frees smem stages and publishes a finished accumulator; warps 4..11 (two
//    warpgroups, one half of the columns each) drain it with tcgen05.ld 32x32b.x32 and store
//    bf16 rows in 16-byte pieces while the MMA warp works on the next tile.
// Knobs: BN (tile N: 256 fills the tensor cores; smaller gives small problems more CTAs),
// STAGES (ring depth), GROUP_M (tile-order group height; 1 = row-major order).
// Not done: TMA multicast over a cluster, 2-CTA tcgen05, split-K for decode shapes, TMA stores.
//
// Evaluate: build/warpsmith eval bf16_gemm kernels/bf16_gemm/kernel.cu [--knob BN=128 ...]
// warpsmith:sass sm_90a: HGMMA UTMALDG
// warpsmith:sass sm_100a: UTCHMMA UTMALDG LDTM
#include <cuda_bf16.h>

#ifndef BN
#define BN 256
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif

namespace {

typedef unsigned long long uint64_t;
typedef unsigned int uint32_t;

// The driver's CUtensorMap (an opaque 128-byte, 64-byte aligned blob), passed by value.
struct alignas(64) CUtensorMap_ {
  unsigned long long v[16];
};

struct Config {
  static constexpr int kBM = 128, kBN = BN, kBK = 64;
  static constexpr int kThreads = 384;
  static constexpr int kABytes = kBM * kBK * 2;  // (BM,BK) bf16, 128B-swizzled
  static constexpr int kBBytes = kBN * kBK * 2;  // (BN,BK) bf16, 128B-swizzled
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kSmemCap = 227 * 1024 - 2048;  // 230400, the plan's cap: barriers + alignment
  static constexpr int kStages = STAGES < kSmemCap / kStageBytes ? STAGES : kSmemCap / kStageBytes;
  static constexpr int kGroupM = GROUP_M;
  static constexpr int kAccCols = 2 * kBN <= 64 ? 64 : 2 * kBN <= 128 ? 128 : 2 * kBN <= 256 ? 256 : 512;
};
static_assert(Config::kBN % 64 == 0 && Config::kBN <= 256, "BN: 64..256 in steps of 64");
static_assert(Config::kStages >= 2, "at least two stages fit");
static_assert(Config::kABytes % 1024 == 0 && Config::kBBytes % 1024 == 0, "1024-byte atoms");

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier ----
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Spins until the phase with this parity has completed (parity 1 on a fresh barrier passes).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// ---- TMA ----
__device__ __forceinline__ void tma_prefetch(const CUtensorMap_* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
// Box at (c0 innermost, c1) of map into dst, completing transaction bytes on bar.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap_* map, uint32_t bar,
                                            int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}

// Output tile t of the grouped order: GROUP_M row-tiles sweep the columns together.
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int per_group = Config::kGroupM * tiles_n;
  const int first_m = (t / per_group) * Config::kGroupM;
  const int rows = min(Config::kGroupM, tiles_m - first_m);
  const int r = t % per_group;
  tm = first_m + r % rows;
  tn = r / rows;
}

// Producer loop (one thread): the same tile sequence and stage counter as the MMA side.
__device__ __forceinline__ void produce(const CUtensorMap_* tma_a, const CUtensorMap_* tma_b,
                                        uint32_t smem, uint32_t full, uint32_t empty, int tiles_m,
                                        int tiles_n, int kblocks) {
  uint32_t it = 0;
  for (int t = blockIdx.x; t < tiles_m * tiles_n; t += gridDim.x) {
    int tm, tn;
    tile_coords(t, tiles_m, tiles_n, tm, tn);
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t s = it % Config::kStages, ph = (it / Config::kStages) & 1;
      mbar_wait(empty + 8 * s, ph ^ 1);
      mbar_expect_tx(full + 8 * s, Config::kStageBytes);
      const uint32_t a_dst = smem + s * Config::kABytes;
      const uint32_t b_dst = smem + Config::kStages * Config::kABytes + s * Config::kBBytes;
      tma_load_2d(a_dst, tma_a, full + 8 * s, kb * Config::kBK, tm * Config::kBM);
      tma_load_2d(b_dst, tma_b, full + 8 * s, kb * Config::kBK, tn * Config::kBN);
    }
  }
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
// ---- sm_100a: tcgen05 ----

// Shared-memory matrix descriptor (tcgen05): K-major, 128-byte swizzle, 8-row groups 1024 B apart.
__device__ __forceinline__ uint64_t umma_desc(uint32_t addr) {
  uint64_t d = (addr & 0x3FFFF) >> 4;  // start address
  d |= uint64_t(1) << 16;              // leading byte offset (unused with this swizzle)
  d |= uint64_t(1024 >> 4) << 32;      // stride byte offset: next 8-row group
  d |= uint64_t(1) << 46;              // descriptor version (sm_100)
  d |= uint64_t(2) << 61;              // SWIZZLE_128B
  return d;
}
// Instruction descriptor, kind::f16: D f32, A and B bf16, both K-major, M=128, N=BN.
constexpr uint32_t kIdesc = (1u << 4) | (1u << 7) | (1u << 10) |
                            (uint32_t(Config::kBN >> 3) << 17) | (uint32_t(Config::kBM >> 4) << 24);

__device__ __forceinline__ void umma_bf16(uint32_t d_tmem, uint64_t da, uint64_t db, uint32_t acc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
      "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n}\n" ::"r"(d_tmem),
      "l"(da), "l"(db), "r"(kIdesc), "r"(acc));
}
// Arrives once on bar when every tcgen05.mma this thread issued so far has completed.
__device__ __forceinline__ void umma_commit(uint32_t bar) {
  asm volatile(
      "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];\n" ::"r"(bar)
      : "memory");
}
__device__ __forceinline__ void tc_fence_after() {
  asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");
}
__device__ __forceinline__ void tc_fence_before() {
  asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");
}
// 32 lanes x 32 columns of fp32: this thread's lane (row), 32 consecutive columns.
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

#else
// ---- sm_90a: wgmma ----

// Shared-memory matrix descriptor (wgmma): K-major, 128-byte swizzle, 8-row groups 1024 B apart.
__device__ __forceinline__ uint64_t wgmma_desc(uint32_t addr) {
  uint64_t d = (addr & 0x3FFFF) >> 4;  // start address
  d |= uint64_t(1) << 16;              // leading byte offset (unused with this swizzle)
  d |= uint64_t(1024 >> 4) << 32;      // stride byte offset: next 8-row group
  d |= uint64_t(1) << 62;              // SWIZZLE_128B
  return d;
}
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// D (64 x N fp32, the warpgroup's accumulator fragment) += A (64x16, smem) * B (Nx16, smem)^T.
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db), "r"(1));
}

__device__ __forceinline__ void wgmma_m64n192k16(float (&d)[96], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
      "}, %96, %97, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
      : "l"(da), "l"(db), "r"(1));
}

__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(1));
}

__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[32], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(1));
}

template <int N>
__device__ __forceinline__ void wgmma_tile(float (&d)[N / 2], uint64_t da, uint64_t db) {
  if constexpr (N == 256) wgmma_m64n256k16(d, da, db);
  if constexpr (N == 192) wgmma_m64n192k16(d, da, db);
  if constexpr (N == 128) wgmma_m64n128k16(d, da, db);
  if constexpr (N == 64) wgmma_m64n64k16(d, da, db);
}
#endif

}  // namespace

// tma_a: a [M,K] as (K,M) boxes (64,128); tma_b: b [N,K] as (K,N) boxes (64,BN); d [M,N].
extern "C" __global__ void __launch_bounds__(Config::kThreads, 1) sm90_sm100_bf16_gemm_tma(
    const __grid_constant__ CUtensorMap_ tma_a, const __grid_constant__ CUtensorMap_ tma_b,
    __nv_bfloat16* __restrict__ d, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // Tiles need 1024-byte alignment (swizzle atoms); barriers follow the ring.
  const uint32_t smem = (smem_u32(smem_raw) + 1023) & ~1023u;
  const uint32_t bars = smem + Config::kStages * Config::kStageBytes;
  const uint32_t full = bars, empty = bars + 8 * Config::kStages;
  const uint32_t acc_full = bars + 16 * Config::kStages, acc_empty = acc_full + 16;
  const uint32_t tmem_slot = acc_empty + 16;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int tiles_m = (M + Config::kBM - 1) / Config::kBM;
  const int tiles_n = (N + Config::kBN - 1) / Config::kBN;
  const int kblocks = (K + Config::kBK - 1) / Config::kBK;
  const int tiles = tiles_m * tiles_n;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  // ======================= sm_100a =======================
  if (threadIdx.x == 0) {
    tma_prefetch(&tma_a);
    tma_prefetch(&tma_b);
    for (int s = 0; s < Config::kStages; ++s) {
      mbar_init(full + 8 * s, 1);
      mbar_init(empty + 8 * s, 1);  // one tcgen05.commit per stage use
    }
    for (int b = 0; b < 2; ++b) {
      mbar_init(acc_full + 8 * b, 1);   // tcgen05.commit after a tile's last MMA
      mbar_init(acc_empty + 8 * b, 8);  // one arrive per epilogue warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if (warp == 2) {  // this warp allocates and later frees the accumulators
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;\n" ::"r"(
                     tmem_slot),
                 "r"(Config::kAccCols)
                 : "memory");
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n" ::: "memory");
  }
  tc_fence_before();
  __syncthreads();
  tc_fence_after();
  uint32_t tmem_base;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(tmem_base) : "r"(tmem_slot) : "memory");

  if (warp == 0) {
    if (lane == 0) produce(&tma_a, &tma_b, smem, full, empty, tiles_m, tiles_n, kblocks);
  } else if (warp == 1) {
    if (lane == 0) {
      uint32_t it = 0, local = 0;
      for (int t = blockIdx.x; t < tiles; t += gridDim.x, ++local) {
        const uint32_t buf = local & 1, aph = (local >> 1) & 1;
        mbar_wait(acc_empty + 8 * buf, aph ^ 1);  // the epilogue has drained this buffer
        tc_fence_after();
        const uint32_t d_tmem = tmem_base + buf * Config::kBN;
        for (int kb = 0; kb < kblocks; ++kb, ++it) {
          const uint32_t s = it % Config::kStages, ph = (it / Config::kStages) & 1;
          mbar_wait(full + 8 * s, ph);
          tc_fence_after();
          const uint32_t a = smem + s * Config::kABytes;
          const uint32_t b = smem + Config::kStages * Config::kABytes + s * Config::kBBytes;
#pragma unroll
          for (int k = 0; k < Config::kBK / 16; ++k) {
            umma_bf16(d_tmem, umma_desc(a + 32 * k), umma_desc(b + 32 * k), (kb | k) != 0);
          }
          umma_commit(empty + 8 * s);  // frees the stage once these MMAs have read it
        }
        umma_commit(acc_full + 8 * buf);
      }
    }
  } else if (warp >= 4) {
    // Epilogue: warp w reads TMEM lanes 32*(w%4).. (its sub-partition), half h of the columns.
    const int q = warp % 4, h = (warp - 4) / 4;
    uint32_t local = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x, ++local) {
      int tm, tn;
      tile_coords(t, tiles_m, tiles_n, tm, tn);
      const uint32_t buf = local & 1, aph = (local >> 1) & 1;
      mbar_wait(acc_full + 8 * buf, aph);
      tc_fence_after();
      const int row = tm * Config::kBM + q * 32 + lane;
#pragma unroll 1
      for (int c = 0; c < Config::kBN / 2; c += 32) {
        const int col0 = h * (Config::kBN / 2) + c;
        uint32_t r[32];
        tmem_ld32(tmem_base + (uint32_t(q * 32) << 16) + buf * Config::kBN + col0, r);
        const int col = tn * Config::kBN + col0;
        if (row < M) {
          uint4* dst = reinterpret_cast<uint4*>(d + static_cast<long long>(row) * N + col);
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            // N % 16 == 0: each 8-column piece is wholly in or out.
            if (col + 8 * j < N) {
              uint4 v;
              v.x = pack_bf16(__uint_as_float(r[8 * j + 0]), __uint_as_float(r[8 * j + 1]));
              v.y = pack_bf16(__uint_as_float(r[8 * j + 2]), __uint_as_float(r[8 * j + 3]));
              v.z = pack_bf16(__uint_as_float(r[8 * j + 4]), __uint_as_float(r[8 * j + 5]));
              v.w = pack_bf16(__uint_as_float(r[8 * j + 6]), __uint_as_float(r[8 * j + 7]));
              dst[j] = v;
            }
          }
        }
      }
      tc_fence_before();
      __syncwarp();
      if (lane == 0) mbar_arrive(acc_empty + 8 * buf);
    }
  }
  __syncwarp();  // lanes that skipped a role loop rejoin before the CTA barrier
  tc_fence_before();
  __syncthreads();
  if (warp == 2) {
    tc_fence_after();
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;\n" ::"r"(tmem_base),
                 "r"(Config::kAccCols)
                 : "memory");
  }
#else
  // ======================= sm_90a =======================
  if (threadIdx.x == 0) {
    tma_prefetch(&tma_a);
    tma_prefetch(&tma_b);
    for (int s = 0; s < Config::kStages; ++s) {
      mbar_init(full + 8 * s, 1);
      mbar_init(empty + 8 * s, 2);  // one arrive per consumer warpgroup
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x == 0) produce(&tma_a, &tma_b, smem, full, empty, tiles_m, tiles_n, kblocks);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int cw = wg - 1;                  // consumer warpgroup: rows 64*cw.. of the tile
    const int t128 = threadIdx.x % 128;     // thread in the warpgroup
    const bool signal = t128 == 0;
    float acc[Config::kBN / 2];             // (64, BN) fp32 fragment
    uint32_t it = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
      int tm, tn;
      tile_coords(t, tiles_m, tiles_n, tm, tn);
#pragma unroll
      for (int i = 0; i < Config::kBN / 2; ++i) acc[i] = 0.0f;
      uint32_t prev = 0;
      for (int kb = 0; kb < kblocks; ++kb, ++it) {
        const uint32_t s = it % Config::kStages, ph = (it / Config::kStages) & 1;
        mbar_wait(full + 8 * s, ph);
        const uint32_t a = smem + s * Config::kABytes + cw * 64 * 128;
        const uint32_t b = smem + Config::kStages * Config::kABytes + s * Config::kBBytes;
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < Config::kBK / 16; ++k) {
          wgmma_tile<Config::kBN>(acc, wgmma_desc(a + 32 * k), wgmma_desc(b + 32 * k));
        }
        wgmma_commit();
        if (kb > 0) {
          wgmma_wait<1>();  // the previous k-block's wgmmas are done: free its stage
          if (signal) mbar_arrive(empty + 8 * prev);
        }
        prev = s;
      }
      wgmma_wait<0>();
      if (signal) mbar_arrive(empty + 8 * prev);
      // Accumulator fragment: register 4j+e (e = 0..3) of thread (warp w, lane l) is row
      // 16w + l/4 + 8*(e/2), column 8j + 2*(l%4) + e%2.
      const int w = t128 / 32;
      const int row0 = tm * Config::kBM + cw * 64 + 16 * w + lane / 4;
      const int colb = tn * Config::kBN + 2 * (lane % 4);
#pragma unroll
      for (int j = 0; j < Config::kBN / 8; ++j) {
        const int col = colb + 8 * j;
        if (col < N) {
          if (row0 < M) {
            *reinterpret_cast<uint32_t*>(d + static_cast<long long>(row0) * N + col) =
                pack_bf16(acc[4 * j], acc[4 * j + 1]);
          }
          if (row0 + 8 < M) {
            *reinterpret_cast<uint32_t*>(d + static_cast<long long>(row0 + 8) * N + col) =
                pack_bf16(acc[4 * j + 2], acc[4 * j + 3]);
          }
        }
      }
    }
  }
#endif
}
