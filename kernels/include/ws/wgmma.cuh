// warpsmith device library: Hopper warpgroup MMA (wgmma, sm_90a only): shared-memory matrix
// descriptors for 128-byte-swizzled tiles, fence / commit / wait, and the m64nNk16 BF16 and
// m64nNk32 E4M3 instructions for N in {16, 32, 64, 128, 192, 256}, fp32 accumulators.
//
// Accumulator fragment (any N, any input type): register 4j+e (e = 0..3) of the warpgroup's thread
// (warp w, lane l) is row 16w + l/4 + 8*(e/2), column 8j + 2*(l%4) + e%2 of the 64 x N tile.
#pragma once

#include "ws/ptx_sm90.cuh"

namespace ws {

/// wgmma shared-memory descriptor of a 128-byte-swizzled operand whose 8-row groups (1024 B atoms)
/// lie 1024 B apart: start>>4 [0,14), LBO>>4 [16,30), SBO>>4 [32,46), layout [62,64) 1 = SW128.
/// K-major: LBO is unused (16). MN-major: LBO is the distance between 64-element MN chunks.
template <uint32_t kLboBytes = 16>
__device__ __forceinline__ uint64_t wgmma_desc_sw128(uint32_t addr) {
  uint64_t d = (addr & 0x3FFFF) >> 4;   // start address
  d |= uint64_t(kLboBytes >> 4) << 16;  // leading byte offset
  d |= uint64_t(1024 >> 4) << 32;       // stride byte offset: next 8-row group
  d |= uint64_t(1) << 62;               // SWIZZLE_128B
  return d;
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
/// Waits until at most N committed groups of this warpgroup are pending.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Operand lists of the fp32 fragment: WS_WGMMA_ACC<R>(d) binds d[0..R) read-write,
// WS_WGMMA_OUT<R>(d) write-only; WS_WGMMA_D<R> names them "%0, ..., %R-1" in the instruction.
#define WS_WGMMA_F8(d, i)                                                                     \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define WS_WGMMA_F32(d, i) \
  WS_WGMMA_F8(d, i), WS_WGMMA_F8(d, i + 8), WS_WGMMA_F8(d, i + 16), WS_WGMMA_F8(d, i + 24)
#define WS_WGMMA_ACC8(d) WS_WGMMA_F8(d, 0)
#define WS_WGMMA_ACC16(d) WS_WGMMA_F8(d, 0), WS_WGMMA_F8(d, 8)
#define WS_WGMMA_ACC32(d) WS_WGMMA_F32(d, 0)
#define WS_WGMMA_ACC64(d) WS_WGMMA_F32(d, 0), WS_WGMMA_F32(d, 32)
#define WS_WGMMA_ACC96(d) WS_WGMMA_ACC64(d), WS_WGMMA_F32(d, 64)
#define WS_WGMMA_ACC128(d) WS_WGMMA_ACC96(d), WS_WGMMA_F32(d, 96)
#define WS_WGMMA_O8(d, i)                                                                     \
  "=f"(d[i]), "=f"(d[i + 1]), "=f"(d[i + 2]), "=f"(d[i + 3]), "=f"(d[i + 4]), "=f"(d[i + 5]), \
      "=f"(d[i + 6]), "=f"(d[i + 7])
#define WS_WGMMA_OUT8(d) WS_WGMMA_O8(d, 0)
#define WS_WGMMA_OUT16(d) WS_WGMMA_O8(d, 0), WS_WGMMA_O8(d, 8)
#define WS_WGMMA_OUT32(d) WS_WGMMA_OUT16(d), WS_WGMMA_O8(d, 16), WS_WGMMA_O8(d, 24)
#define WS_WGMMA_OUT64(d) \
  WS_WGMMA_OUT32(d), WS_WGMMA_O8(d, 32), WS_WGMMA_O8(d, 40), WS_WGMMA_O8(d, 48), WS_WGMMA_O8(d, 56)
#define WS_WGMMA_D8 "%0, %1, %2, %3, %4, %5, %6, %7"
#define WS_WGMMA_D16 WS_WGMMA_D8 ", %8, %9, %10, %11, %12, %13, %14, %15"
#define WS_WGMMA_D32                                             \
  WS_WGMMA_D16                                                   \
  ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27" \
  ", %28, %29, %30, %31"
#define WS_WGMMA_D64                                             \
  WS_WGMMA_D32                                                   \
  ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43" \
  ", %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55" \
  ", %56, %57, %58, %59, %60, %61, %62, %63"
#define WS_WGMMA_D96                                             \
  WS_WGMMA_D64                                                   \
  ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75" \
  ", %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87" \
  ", %88, %89, %90, %91, %92, %93, %94, %95"
#define WS_WGMMA_D128                                \
  WS_WGMMA_D96                                       \
  ", %96, %97, %98, %99, %100, %101, %102, %103"     \
  ", %104, %105, %106, %107, %108, %109, %110, %111" \
  ", %112, %113, %114, %115, %116, %117, %118, %119" \
  ", %120, %121, %122, %123, %124, %125, %126, %127"

// One wgmma.mma_async, m64n<n>k<k>, inputs of type t, into the R = n/2 registers of d: a, b (%R,
// %R+1) the descriptors, p (%R+2) the accumulate flag, `trans` the operands after scale-d ("" or
// the transpose immediates), `in` the input list (WS_WGMMA_IN or WS_WGMMA_IN_TRANS).
// clang-format off
#define WS_WGMMA_ASYNC(n, k, t, R, a, b, p, trans, in)                                            \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #p ", 0;\n"                                   \
               "wgmma.mma_async.sync.aligned.m64n" #n "k" #k ".f32." #t "." #t " {" WS_WGMMA_D##R \
               "}, %" #a ", %" #b ", p, 1, 1" trans ";\n}\n"                                      \
               : WS_WGMMA_ACC##R(d)                                                               \
               : in)
// clang-format on
#define WS_WGMMA_IN "l"(da), "l"(db), "r"(accumulate)
#define WS_WGMMA_IN_TRANS WS_WGMMA_IN, "n"(kTransA), "n"(kTransB)

/// D (64 x N fp32, the warpgroup's fragment) = A (64x16 bf16) * B (Nx16 bf16)^T
/// + (accumulate ? D : 0), both from shared memory; kTransA / kTransB = 1 select MN-major operands.
template <int N, int kTransA = 0, int kTransB = 0>
__device__ __forceinline__ void wgmma_bf16(float (&d)[N / 2], uint64_t da, uint64_t db,
                                           uint32_t accumulate) {
  static_assert(N == 16 || N == 32 || N == 64 || N == 128 || N == 192 || N == 256, "wgmma N");
#define WS_WGMMA_BF16(n, R, a, b, p, ta, tb) \
  WS_WGMMA_ASYNC(n, 16, bf16, R, a, b, p, ", %" #ta ", %" #tb, WS_WGMMA_IN_TRANS)
  if constexpr (N == 256)
    WS_WGMMA_BF16(256, 128, 128, 129, 130, 131, 132);
  if constexpr (N == 192)
    WS_WGMMA_BF16(192, 96, 96, 97, 98, 99, 100);
  if constexpr (N == 128)
    WS_WGMMA_BF16(128, 64, 64, 65, 66, 67, 68);
  if constexpr (N == 64)
    WS_WGMMA_BF16(64, 32, 32, 33, 34, 35, 36);
  if constexpr (N == 32)
    WS_WGMMA_BF16(32, 16, 16, 17, 18, 19, 20);
  if constexpr (N == 16)
    WS_WGMMA_BF16(16, 8, 8, 9, 10, 11, 12);
#undef WS_WGMMA_BF16
}

/// D (64 x N fp32) = A (64x16 bf16, this thread's four registers of the warpgroup's fragment:
/// a[0] row r cols 2q..2q+1, a[1] row r+8, a[2] row r cols 2q+8..2q+9, a[3] row r+8; r = 16 *
/// warp + lane / 4, q = lane % 4) * B (Nx16 bf16, K-major in shared memory)^T + (accumulate ?
/// D : 0). The registers must hold their values until the wgmma completes (wgmma_wait).
template <int N>
__device__ __forceinline__ void wgmma_bf16_rs(float (&d)[N / 2], const uint32_t (&a)[4],
                                              uint64_t db, uint32_t accumulate) {
  static_assert(N == 64 || N == 128 || N == 192 || N == 256, "wgmma N");
#define WS_WGMMA_BF16_RS(n, R, a0, a1, a2, a3, b, p)                                           \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #p ", 0;\n"                               \
               "wgmma.mma_async.sync.aligned.m64n" #n "k16.f32.bf16.bf16 {" WS_WGMMA_D##R      \
               "}, {%" #a0 ", %" #a1 ", %" #a2 ", %" #a3 "}, %" #b ", p, 1, 1, 0;\n}\n"     \
               : WS_WGMMA_ACC##R(d)                                                            \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate))
  if constexpr (N == 256)
    WS_WGMMA_BF16_RS(256, 128, 128, 129, 130, 131, 132, 133);
  if constexpr (N == 192)
    WS_WGMMA_BF16_RS(192, 96, 96, 97, 98, 99, 100, 101);
  if constexpr (N == 128)
    WS_WGMMA_BF16_RS(128, 64, 64, 65, 66, 67, 68, 69);
  if constexpr (N == 64)
    WS_WGMMA_BF16_RS(64, 32, 32, 33, 34, 35, 36, 37);
#undef WS_WGMMA_BF16_RS
}

/// D (64 x N fp32) = A (64x32 e4m3) * B (Nx32 e4m3)^T + (accumulate ? D : 0). FP8 wgmma has no
/// transpose immediates: both operands are K-major.
template <int N>
__device__ __forceinline__ void wgmma_e4m3(float (&d)[N / 2], uint64_t da, uint64_t db,
                                           uint32_t accumulate) {
  static_assert(N == 16 || N == 32 || N == 64 || N == 128 || N == 192 || N == 256, "wgmma N");
  if constexpr (N == 256)
    WS_WGMMA_ASYNC(256, 32, e4m3, 128, 128, 129, 130, "", WS_WGMMA_IN);
  if constexpr (N == 192)
    WS_WGMMA_ASYNC(192, 32, e4m3, 96, 96, 97, 98, "", WS_WGMMA_IN);
  if constexpr (N == 128)
    WS_WGMMA_ASYNC(128, 32, e4m3, 64, 64, 65, 66, "", WS_WGMMA_IN);
  if constexpr (N == 64)
    WS_WGMMA_ASYNC(64, 32, e4m3, 32, 32, 33, 34, "", WS_WGMMA_IN);
  if constexpr (N == 32)
    WS_WGMMA_ASYNC(32, 32, e4m3, 16, 16, 17, 18, "", WS_WGMMA_IN);
  if constexpr (N == 16)
    WS_WGMMA_ASYNC(16, 32, e4m3, 8, 8, 9, 10, "", WS_WGMMA_IN);
}

/// D (64 x N fp32) = A (64x32 e4m3) * B (Nx32 e4m3)^T, N in {16, 32, 64, 128}: scale-d is the
/// immediate 0 and D is write-only, so D's previous values are dead before the instruction (a
/// fresh fragment per call; with wgmma_e4m3's accumulate = 0 they stay live as inputs).
template <int N>
__device__ __forceinline__ void wgmma_e4m3_fresh(float (&d)[N / 2], uint64_t da, uint64_t db) {
  static_assert(N == 16 || N == 32 || N == 64 || N == 128, "wgmma N");
#define WS_WGMMA_FRESH(n, R, a, b)                                                        \
  asm volatile("wgmma.mma_async.sync.aligned.m64n" #n "k32.f32.e4m3.e4m3 {" WS_WGMMA_D##R \
               "}, %" #a ", %" #b ", 0, 1, 1;\n"                                          \
               : WS_WGMMA_OUT##R(d)                                                       \
               : "l"(da), "l"(db))
  if constexpr (N == 128)
    WS_WGMMA_FRESH(128, 64, 64, 65);
  if constexpr (N == 64)
    WS_WGMMA_FRESH(64, 32, 32, 33);
  if constexpr (N == 32)
    WS_WGMMA_FRESH(32, 16, 16, 17);
  if constexpr (N == 16)
    WS_WGMMA_FRESH(16, 8, 8, 9);
#undef WS_WGMMA_FRESH
}

}  // namespace ws
