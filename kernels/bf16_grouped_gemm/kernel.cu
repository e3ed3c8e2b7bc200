/* warpsmith:plan
{ "knobs": { "BN": [256, 128, 64], "STAGES": [4, 5, 3, 6], "GROUP_M": [8, 16, 4, 1] },
  "tensor_maps": {
    "tma_a": { "tensor": "a", "dims": ["(form == 0) * K + (form != 0) * N", "M"],
               "box": ["64", "(form == 2) * 64 + (form != 2) * 128"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "tma_b": { "tensor": "b", "dims": ["K", "(form == 2) * M + (form != 2) * E * N"],
               "box": ["64", "(form == 0) * BN + (form != 0) * 64"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 } },
  "launch": [ { "kernel": "sm90_sm100_bf16_grouped_gemm_tma",
                "grid": ["min(num_sms, (form != 2) * (ceil_div(M, 128) + E) * ceil_div((form == 0) * N + (form != 0) * K, BN) + (form == 2) * E * ceil_div(N, 128) * ceil_div(K, BN))"],
                "block": ["384"],
                "smem": "min(STAGES, 226304 / (16384 + 128 * BN)) * (16384 + 128 * BN) + 6144",
                "args": ["tma_a", "tma_b", "offs", "out", "M", "E", "N", "K"] } ] }
*/
// BF16 grouped GEMM of an MoE layer's experts (spec.json), three forms by WS_FORM, one source:
//   0 fwd:   out[r, n]     = sum_k a[r, k] * b[g*N + n, k]     (2D x 3D)
//   1 dgrad: out[r, k]     = sum_n a[r, n] * b[g*N + n, k]     (2D x 3D, contraction over N)
//   2 wgrad: out[g*N+n, k] = sum_{r in g} a[r, n] * b[r, k]    (2D x 2D, contraction over tokens)
// The machinery is kernels/bf16_gemm's (TMA + mbarrier ring, warp-specialized, persistent); what is
// new is the group scheduler and the operand layouts per form.
//
//  - Tiles: 128 output rows x BN output columns; k-blocks of 64 contraction elements. Every operand
//    box is 128-byte swizzled (64 bf16 inner), so one stage is A 16 KiB + B BN*128 bytes in every
//    form and the full barrier always expects the same byte count (TMA counts zero-filled bytes).
//  - Operand layouts (MMA "M" = output rows, "N" = output columns):
//      fwd:   A = a rows (K-major), B = expert g's rows of b (K-major): the dense GEMM's layout.
//      dgrad: A = a rows (K-major over n). B = b[g*N + n, k] with k contiguous: an MN-major
//             (transposed) operand: BN/64 boxes of (64 k) x (64 n), each one 128-byte swizzle
//             column; descriptor LBO = 8 KiB (next 64 columns), SBO = 1 KiB (next 8 n), and a
//             k16 step is +2 KiB. Reading b as stored beats a transposed copy of the weights.
//      wgrad: both operands MN-major the same way: A = a[r, n] as 2 boxes (64 n) x (64 r),
//             B = b[r, k] as BN/64 boxes (64 k) x (64 r).
//  - Ragged contraction without masking: every depth (K, N, or a group's row count) is a multiple
//    of 16, so a k16 step is wholly inside or wholly past the end; the MMA side issues only
//    min(4, (depth - 64*kb)/16) steps of the last k-block. Rows of the next group (wgrad) or of
//    the next expert (dgrad) that TMA loaded into the stage are never multiplied.
//    Output rows past a group's end (fwd/dgrad) or past N (wgrad) and columns past the output
//    width are masked at the store; TMA zero-fills only past the tensor's end.
//  - Scheduler: a persistent CTA takes linear tiles blockIdx.x, +gridDim.x, ...; a cursor walks
//    the groups forward (offs copied once to shared memory, E <= 1024; beyond that it reads
//    global memory) summing per-group tile counts, so mapping a tile costs O(1) amortized. Inside
//    a group tiles go in GROUP_M-row bands (L2 reuse of the group's B columns). Empty groups
//    have no tiles in fwd/dgrad; in wgrad a group always has ceil(N/128) x ceil(K/BN) tiles and
//    an empty one has zero k-blocks: its tiles are stored as zeros without touching the MMA.
//  - sm_90a: warpgroup 0 produces (one thread issues TMA, setmaxnreg 40), warpgroups 1 and 2
//    consume 64 rows each with wgmma m64nBNk16 (transpose bits per form), wait_group(1) to free
//    the previous stage; bf16 pairs stored from the accumulator fragment.
//  - sm_100a: warp 0 TMA, warp 1 issues tcgen05.mma (M=128, N=BN, a/b major bits per form) into
//    a double-buffered TMEM accumulator; warps 4..11 drain it (tcgen05.ld 32x32b.x32) and store.
// Knobs: BN (output tile width), STAGES (ring depth, capped to fit), GROUP_M (band height).
// Not done: TMA multicast / 2-CTA MMA, TMA-store epilogue, stream-K for the decode shape.
//
// Evaluate: build/warpsmith eval bf16_grouped_gemm kernels/bf16_grouped_gemm/kernel.cu --set form=dgrad
// warpsmith:sass sm_90a: HGMMA UTMALDG
// warpsmith:sass sm_100a: UTCHMMA UTMALDG LDTM
#include <cuda_bf16.h>

#ifndef WS_FORM
#error "compile with -DWS_FORM (the problem's form parameter)"
#endif
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
  static constexpr int kForm = WS_FORM;
  static constexpr int kBM = 128, kBN = BN, kBK = 64;
  static constexpr int kThreads = 384;
  static constexpr int kABytes = kBM * kBK * 2;  // (BM,BK) bf16, 128B-swizzled
  static constexpr int kBBytes = kBN * kBK * 2;  // (BN,BK) bf16, 128B-swizzled
  static constexpr int kBoxBytes = 64 * 64 * 2;  // one MN-major box: (64 contraction, 64 MN)
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kMaxE = 1024;                    // offs held in shared memory
  static constexpr int kSmemCap = 227 * 1024 - 6144;    // 226304, the plan's cap
  static constexpr int kStages = STAGES < kSmemCap / kStageBytes ? STAGES : kSmemCap / kStageBytes;
  static constexpr int kGroupM = GROUP_M;
  static constexpr int kAccCols = 2 * kBN <= 128 ? 128 : 2 * kBN <= 256 ? 256 : 512;
  // MN-major (transposed) operands: A in wgrad, B in dgrad and wgrad.
  static constexpr int kTransA = kForm == 2 ? 1 : 0;
  static constexpr int kTransB = kForm != 0 ? 1 : 0;
};
static_assert(Config::kForm >= 0 && Config::kForm <= 2, "WS_FORM: 0 fwd, 1 dgrad, 2 wgrad");
static_assert(Config::kBN == 64 || Config::kBN == 128 || Config::kBN == 256, "BN: 64, 128, 256");
static_assert(Config::kStages >= 2, "at least two stages fit");
static_assert(Config::kABytes % 1024 == 0 && Config::kBBytes % 1024 == 0, "1024-byte atoms");
constexpr int kTransA = Config::kTransA, kTransB = Config::kTransB;

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

// ---- group scheduler ----
// One output tile: group g owns token rows [s, e); tile (tm, tn) of that group's output.
struct Tile {
  int g, s, e, tm, tn;
  // Contraction length and k-blocks: K (fwd), N (dgrad), the group's rows (wgrad).
  __device__ int depth(int N, int K) const {
    return Config::kForm == 0 ? K : Config::kForm == 1 ? N : e - s;
  }
};

// Walks the groups forward as the linear tile index grows (each role keeps its own cursor).
// Only the walk's position lives in registers; the problem sizes are re-read from the params.
struct GroupCursor {
  int g = -1, base = 0, count = 0, s = 0, e = 0;

  __device__ static int tiles_n(int N, int K) {
    return ((Config::kForm == 0 ? N : K) + Config::kBN - 1) / Config::kBN;
  }
  // Tile t (t never decreases between calls); false once t is past the last group.
  __device__ bool seek(int t, const int* offs, int E, int N, int K, Tile& tile) {
    const int tn_count = tiles_n(N, K);
    while (t >= base + count) {
      base += count;
      if (++g >= E) return false;
      s = g == 0 ? 0 : offs[g - 1];
      e = offs[g];
      count = ((Config::kForm == 2 ? N : e - s) + Config::kBM - 1) / Config::kBM * tn_count;
    }
    // GROUP_M row-tiles of the group sweep the columns together.
    const int tiles_m = count / tn_count;
    const int r = t - base, per_band = Config::kGroupM * tn_count;
    const int first_m = (r / per_band) * Config::kGroupM;
    const int band = min(Config::kGroupM, tiles_m - first_m);
    const int q = r % per_band;
    tile = Tile{g, s, e, first_m + q % band, q / band};
    return true;
  }
};

// Producer loop (one thread): the same tile sequence and stage counter as the MMA side.
__device__ __forceinline__ void produce(const CUtensorMap_* tma_a, const CUtensorMap_* tma_b,
                                        uint32_t smem, uint32_t full, uint32_t empty,
                                        const int* offs, int E, int N, int K) {
  GroupCursor cur;
  uint32_t it = 0;
  Tile tl;
  for (int t = blockIdx.x; cur.seek(t, offs, E, N, K, tl); t += gridDim.x) {
    const int kblocks = (tl.depth(N, K) + Config::kBK - 1) / Config::kBK;
#pragma unroll 1  // the producer lives in 40 registers (setmaxnreg)
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t st = it % Config::kStages, ph = (it / Config::kStages) & 1;
      mbar_wait(empty + 8 * st, ph ^ 1);
      mbar_expect_tx(full + 8 * st, Config::kStageBytes);
      const uint32_t a_dst = smem + st * Config::kABytes;
      const uint32_t b_dst = smem + Config::kStages * Config::kABytes + st * Config::kBBytes;
      const uint32_t bar = full + 8 * st;
      const int k0 = kb * Config::kBK;
      if (Config::kForm == 0) {
        tma_load_2d(a_dst, tma_a, bar, k0, tl.s + tl.tm * Config::kBM);
        tma_load_2d(b_dst, tma_b, bar, k0, tl.g * N + tl.tn * Config::kBN);
      } else if (Config::kForm == 1) {
        tma_load_2d(a_dst, tma_a, bar, k0, tl.s + tl.tm * Config::kBM);
#pragma unroll
        for (int j = 0; j < Config::kBN / 64; ++j)  // (64 n) x (64 k) boxes, k contiguous
          tma_load_2d(b_dst + j * Config::kBoxBytes, tma_b, bar, tl.tn * Config::kBN + 64 * j,
                      tl.g * N + k0);
      } else {
#pragma unroll
        for (int i = 0; i < 2; ++i)  // (64 r) x (64 n) boxes, n contiguous
          tma_load_2d(a_dst + i * Config::kBoxBytes, tma_a, bar, tl.tm * Config::kBM + 64 * i,
                      tl.s + k0);
#pragma unroll
        for (int j = 0; j < Config::kBN / 64; ++j)  // (64 r) x (64 k) boxes, k contiguous
          tma_load_2d(b_dst + j * Config::kBoxBytes, tma_b, bar, tl.tn * Config::kBN + 64 * j,
                      tl.s + k0);
      }
    }
  }
}

// k16 steps of k-block kb that lie inside the contraction (depth % 16 == 0).
__device__ __forceinline__ int ksteps_of(int depth, int kb) {
  return min(Config::kBK / 16, (depth - kb * Config::kBK) / 16);
}

// Byte offset of k16 step k inside an operand stage: +32 B along a K-major 128-byte row,
// +2 KiB (16 rows of 128 B) in an MN-major box.
template <int kTrans>
__device__ __forceinline__ uint32_t kstep_bytes(int k) {
  return kTrans ? 2048u * k : 32u * k;
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// Output tile origin and bounds: rows [row0, row0 + rows_left) of out, columns < ncols, ld ncols.
struct OutTile {
  long long row0;
  int rows_left, col0, ncols;
};
__device__ __forceinline__ OutTile out_tile(const Tile& tl, int N, int K) {
  OutTile o;
  if (Config::kForm == 2) {
    o.row0 = static_cast<long long>(tl.g) * N + tl.tm * Config::kBM;
    o.rows_left = N - tl.tm * Config::kBM;
  } else {
    o.row0 = tl.s + tl.tm * Config::kBM;
    o.rows_left = tl.e - tl.s - tl.tm * Config::kBM;
  }
  o.col0 = tl.tn * Config::kBN;
  o.ncols = Config::kForm == 0 ? N : K;
  return o;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
// ---- sm_100a: tcgen05 ----

// Shared-memory matrix descriptor (tcgen05), 128-byte swizzle, 8-row groups 1024 B apart.
// K-major: LBO unused. MN-major: LBO = 8 KiB from one 64-wide MN box to the next.
template <int kTrans>
__device__ __forceinline__ uint64_t umma_desc(uint32_t addr) {
  uint64_t d = (addr & 0x3FFFF) >> 4;                   // start address
  d |= uint64_t(kTrans ? Config::kBoxBytes >> 4 : 1) << 16;  // leading byte offset
  d |= uint64_t(1024 >> 4) << 32;                       // stride byte offset: next 8-row group
  d |= uint64_t(1) << 46;                               // descriptor version (sm_100)
  d |= uint64_t(2) << 61;                               // SWIZZLE_128B
  return d;
}
// Instruction descriptor, kind::f16: D f32, A and B bf16, major-ness per form, M=128, N=BN.
constexpr uint32_t kIdesc = (1u << 4) | (1u << 7) | (1u << 10) | (uint32_t(kTransA) << 15) |
                            (uint32_t(kTransB) << 16) | (uint32_t(Config::kBN >> 3) << 17) |
                            (uint32_t(Config::kBM >> 4) << 24);

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

// Shared-memory matrix descriptor (wgmma), 128-byte swizzle, 8-row groups 1024 B apart.
// K-major: LBO unused. MN-major: LBO = 8 KiB from one 64-wide MN box to the next.
template <int kTrans>
__device__ __forceinline__ uint64_t wgmma_desc(uint32_t addr) {
  uint64_t d = (addr & 0x3FFFF) >> 4;                   // start address
  d |= uint64_t(kTrans ? Config::kBoxBytes >> 4 : 1) << 16;  // leading byte offset
  d |= uint64_t(1024 >> 4) << 32;                       // stride byte offset: next 8-row group
  d |= uint64_t(1) << 62;                               // SWIZZLE_128B
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

// D (64 x N fp32, the warpgroup's fragment) += A (64x16) * B (Nx16)^T, both from shared memory;
// the last two immediates are the transpose (MN-major) bits of A and B.
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
      "}, %128, %129, p, 1, 1, %131, %132;\n}\n"
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
      : "l"(da), "l"(db), "r"(1), "n"(kTransA), "n"(kTransB));
}

__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, %67, %68;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(1), "n"(kTransA), "n"(kTransB));
}

__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[32], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, %35, %36;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(1), "n"(kTransA), "n"(kTransB));
}

template <int N>
__device__ __forceinline__ void wgmma_tile(float (&d)[N / 2], uint64_t da, uint64_t db) {
  if constexpr (N == 256) wgmma_m64n256k16(d, da, db);
  if constexpr (N == 128) wgmma_m64n128k16(d, da, db);
  if constexpr (N == 64) wgmma_m64n64k16(d, da, db);
}
#endif

}  // namespace

// tma_a / tma_b: see the plan (boxes per form); offs [E] cumulative group ends; out as spec.json.
extern "C" __global__ void __launch_bounds__(Config::kThreads, 1) sm90_sm100_bf16_grouped_gemm_tma(
    const __grid_constant__ CUtensorMap_ tma_a, const __grid_constant__ CUtensorMap_ tma_b,
    const int* __restrict__ offs, __nv_bfloat16* __restrict__ out, int M, int E, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // Tiles need 1024-byte alignment (swizzle atoms); barriers, then offs, follow the ring.
  const uint32_t smem = (smem_u32(smem_raw) + 1023) & ~1023u;
  const uint32_t bars = smem + Config::kStages * Config::kStageBytes;
  const uint32_t full = bars, empty = bars + 8 * Config::kStages;
  const uint32_t acc_full = bars + 16 * Config::kStages, acc_empty = acc_full + 16;
  const uint32_t tmem_slot = acc_empty + 16;
  int* offs_smem = reinterpret_cast<int*>(smem_raw + (bars + 1024 - smem_u32(smem_raw)));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  (void)M;

  // offs read once; E > kMaxE falls back to global reads (L2-resident, forward walk).
  for (int i = threadIdx.x; i < E && i < Config::kMaxE; i += Config::kThreads)
    offs_smem[i] = offs[i];
  const int* goffs = E <= Config::kMaxE ? offs_smem : offs;

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
    if (lane == 0) produce(&tma_a, &tma_b, smem, full, empty, goffs, E, N, K);
  } else if (warp == 1) {
    if (lane == 0) {
      GroupCursor cur;
      Tile tl;
      uint32_t it = 0, local = 0;
      for (int t = blockIdx.x; cur.seek(t, goffs, E, N, K, tl); t += gridDim.x) {
        const int depth = tl.depth(N, K), kblocks = (depth + Config::kBK - 1) / Config::kBK;
        if (kblocks == 0) continue;  // empty wgrad group: the epilogue stores zeros
        const uint32_t buf = local & 1, aph = (local >> 1) & 1;
        ++local;
        mbar_wait(acc_empty + 8 * buf, aph ^ 1);  // the epilogue has drained this buffer
        tc_fence_after();
        const uint32_t d_tmem = tmem_base + buf * Config::kBN;
        for (int kb = 0; kb < kblocks; ++kb, ++it) {
          const uint32_t s = it % Config::kStages, ph = (it / Config::kStages) & 1;
          mbar_wait(full + 8 * s, ph);
          tc_fence_after();
          const uint32_t a = smem + s * Config::kABytes;
          const uint32_t b = smem + Config::kStages * Config::kABytes + s * Config::kBBytes;
          const int ksteps = ksteps_of(depth, kb);
#pragma unroll
          for (int k = 0; k < Config::kBK / 16; ++k) {
            if (k < ksteps)
              umma_bf16(d_tmem, umma_desc<kTransA>(a + kstep_bytes<kTransA>(k)),
                        umma_desc<kTransB>(b + kstep_bytes<kTransB>(k)), (kb | k) != 0);
          }
          umma_commit(empty + 8 * s);  // frees the stage once these MMAs have read it
        }
        umma_commit(acc_full + 8 * buf);
      }
    }
  } else if (warp >= 4) {
    // Epilogue: warp w reads TMEM lanes 32*(w%4).. (its sub-partition), half h of the columns.
    const int q = warp % 4, h = (warp - 4) / 4;
    GroupCursor cur;
    Tile tl;
    uint32_t local = 0;
    for (int t = blockIdx.x; cur.seek(t, goffs, E, N, K, tl); t += gridDim.x) {
      const OutTile o = out_tile(tl, N, K);
      const bool zero = tl.depth(N, K) == 0;
      const uint32_t buf = local & 1, aph = (local >> 1) & 1;
      if (!zero) {
        ++local;
        mbar_wait(acc_full + 8 * buf, aph);
        tc_fence_after();
      }
      const int r = q * 32 + lane;
#pragma unroll 1
      for (int c = 0; c < Config::kBN / 2; c += 32) {
        const int cc = h * (Config::kBN / 2) + c;
        uint32_t v[32];
        if (zero) {
#pragma unroll
          for (int i = 0; i < 32; ++i) v[i] = 0u;
        } else {
          tmem_ld32(tmem_base + (uint32_t(q * 32) << 16) + buf * Config::kBN + cc, v);
        }
        const int col = o.col0 + cc;
        if (r < o.rows_left) {
          uint4* dst = reinterpret_cast<uint4*>(out + (o.row0 + r) * o.ncols + col);
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            // widths are multiples of 16: each 8-column piece is wholly in or out.
            if (col + 8 * j < o.ncols) {
              uint4 p;
              p.x = pack_bf16(__uint_as_float(v[8 * j + 0]), __uint_as_float(v[8 * j + 1]));
              p.y = pack_bf16(__uint_as_float(v[8 * j + 2]), __uint_as_float(v[8 * j + 3]));
              p.z = pack_bf16(__uint_as_float(v[8 * j + 4]), __uint_as_float(v[8 * j + 5]));
              p.w = pack_bf16(__uint_as_float(v[8 * j + 6]), __uint_as_float(v[8 * j + 7]));
              dst[j] = p;
            }
          }
        }
      }
      if (!zero) {
        tc_fence_before();
        __syncwarp();
        if (lane == 0) mbar_arrive(acc_empty + 8 * buf);
      }
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
    if (threadIdx.x == 0) produce(&tma_a, &tma_b, smem, full, empty, goffs, E, N, K);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int cw = wg - 1;               // consumer warpgroup: rows 64*cw.. of the tile
    const int t128 = threadIdx.x % 128;  // thread in the warpgroup
    const bool signal = t128 == 0;
    // Rows 64*cw.. of the A stage: 64 K-major rows of 128 B, or the cw-th MN-major box; 8 KiB both.
    const uint32_t a_off = cw * Config::kBoxBytes;
    GroupCursor cur;
    Tile tl;
    float acc[Config::kBN / 2];  // (64, BN) fp32 fragment
    uint32_t it = 0;
    for (int t = blockIdx.x; cur.seek(t, goffs, E, N, K, tl); t += gridDim.x) {
      const int depth = tl.depth(N, K), kblocks = (depth + Config::kBK - 1) / Config::kBK;
#pragma unroll
      for (int i = 0; i < Config::kBN / 2; ++i) acc[i] = 0.0f;
      uint32_t prev = 0;
      for (int kb = 0; kb < kblocks; ++kb, ++it) {
        const uint32_t s = it % Config::kStages, ph = (it / Config::kStages) & 1;
        mbar_wait(full + 8 * s, ph);
        const uint32_t a = smem + s * Config::kABytes + a_off;
        const uint32_t b = smem + Config::kStages * Config::kABytes + s * Config::kBBytes;
        const int ksteps = ksteps_of(depth, kb);
        wgmma_fence();
        if (ksteps == Config::kBK / 16) {  // whole k-block: straight-line wgmmas
#pragma unroll
          for (int k = 0; k < Config::kBK / 16; ++k)
            wgmma_tile<Config::kBN>(acc, wgmma_desc<kTransA>(a + kstep_bytes<kTransA>(k)),
                                    wgmma_desc<kTransB>(b + kstep_bytes<kTransB>(k)));
        } else {  // the contraction's tail
#pragma unroll
          for (int k = 0; k < Config::kBK / 16; ++k) {
            if (k < ksteps)
              wgmma_tile<Config::kBN>(acc, wgmma_desc<kTransA>(a + kstep_bytes<kTransA>(k)),
                                      wgmma_desc<kTransB>(b + kstep_bytes<kTransB>(k)));
          }
        }
        wgmma_commit();
        if (kb > 0) {
          wgmma_wait<1>();  // the previous k-block's wgmmas are done: free its stage
          if (signal) mbar_arrive(empty + 8 * prev);
        }
        prev = s;
      }
      wgmma_wait<0>();
      if (signal && kblocks > 0) mbar_arrive(empty + 8 * prev);
      // Accumulator fragment: register 4j+e (e = 0..3) of thread (warp w, lane l) is row
      // 16w + l/4 + 8*(e/2), column 8j + 2*(l%4) + e%2.
      const OutTile o = out_tile(tl, N, K);
      const int w = t128 / 32;
      const int r = cw * 64 + 16 * w + lane / 4;
      const int colb = o.col0 + 2 * (lane % 4);
#pragma unroll
      for (int j = 0; j < Config::kBN / 8; ++j) {
        const int col = colb + 8 * j;
        if (col < o.ncols) {
          if (r < o.rows_left)
            *reinterpret_cast<uint32_t*>(out + (o.row0 + r) * o.ncols + col) =
                pack_bf16(acc[4 * j], acc[4 * j + 1]);
          if (r + 8 < o.rows_left)
            *reinterpret_cast<uint32_t*>(out + (o.row0 + r + 8) * o.ncols + col) =
                pack_bf16(acc[4 * j + 2], acc[4 * j + 3]);
        }
      }
    }
  }
#endif
}
