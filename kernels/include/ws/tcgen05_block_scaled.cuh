// warpsmith device library: Blackwell block-scaled tensor-core MMA (sm_100a only), cta_group::1:
// tcgen05.mma kind::mxf8f6f4.block_scale.scale_vec::1X with E8M0 scale factors in tensor memory,
// its instruction descriptor, and tcgen05.cp of a 128x4 blocked scale tile from shared memory.
//
// Scale factors in TMEM (PTX ISA, tcgen05 "Block Scaling", scale_vec::1X, M = 128): one E8M0 byte
// per row of A (column of B) per 32-K block. The scale of row r sits in lane r % 32 of TMEM
// column sf + r / 32, duplicated into all four 32-lane sub-partitions, and the MMA's scale-factor
// ID (0..3) picks the byte of that 32-bit word: up to four consecutive K=32 MMAs share one copy.
// Its shared-memory source is the 128x4 "blocked" tile (512 bytes, the cuBLAS / CUTLASS layout):
// the scale of row r, block k at byte (r % 32) * 16 + (r / 32) * 4 + k; tcgen05.cp .32x128b
// .warpx4 moves its 32 rows of 16 bytes to lanes 0-31 x 4 columns and multicasts them to the
// other sub-partitions.
#pragma once

#include "ws/tcgen05.cuh"

namespace ws {

/// Byte offset of (row r, block k) in a 128x4 blocked scale tile.
constexpr uint32_t blocked_scale_offset(int r, int k) {
  return uint32_t((r % 32) * 16 + (r / 32) * 4 + k);
}

/// tcgen05 shared-memory descriptor of an unswizzled K-major matrix of 16-byte rows stored
/// contiguously (tcgen05.cp's source): 8-row core matrices of 128 bytes, the next 8 rows 128
/// bytes on (SBO); one core matrix wide, so LBO is never used. Version 1 at [46,48), layout 0.
__device__ __forceinline__ uint64_t umma_desc_rows16(uint32_t addr) {
  uint64_t d = (addr & 0x3FFFF) >> 4;  // start address
  d |= uint64_t(128 >> 4) << 16;       // leading byte offset (unused)
  d |= uint64_t(128 >> 4) << 32;       // stride byte offset: next 8 rows
  d |= uint64_t(1) << 46;              // descriptor version (sm_100)
  return d;
}

/// Instruction descriptor, kind::mxf8f6f4 block-scaled (D is fp32 by definition; bits [4,6) are
/// the B scale-factor ID here, not a D format): B SF ID [4,6), A format [7,10), B format [10,13)
/// (0 = E4M3), MN-major bits 15 (A) and 16 (B), N>>3 at [17,23), scale format bit 23
/// (1 = UE8M0), bits [24,27) reserved, M>>7 at [27,29), A SF ID [29,31). M is 128 here.
constexpr uint32_t umma_idesc_mx(uint32_t a_fmt, uint32_t b_fmt, int m, int n, uint32_t sf_id) {
  return (sf_id << 4) | (a_fmt << 7) | (b_fmt << 10) | (uint32_t(n >> 3) << 17) | (1u << 23) |
         (uint32_t(m >> 7) << 27) | (sf_id << 29);
}

/// D (TMEM) = (A * scale_A) (B * scale_B)^T + (accumulate ? D : 0): 8-bit A and B from shared
/// memory, E8M0 scales from TMEM columns sfa / sfb (bytes chosen by idesc's SF IDs); one thread
/// issues. K = 32 per instruction, i.e. one MX block.
__device__ __forceinline__ void umma_mxf8f6f4(uint32_t d_tmem, uint64_t da, uint64_t db,
                                              uint32_t idesc, uint32_t sfa, uint32_t sfb,
                                              uint32_t accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
      "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.scale_vec::1X [%0], %1, %2, %3, [%4], "
      "[%5], p;\n}\n" ::"r"(d_tmem),
      "l"(da), "l"(db), "r"(idesc), "r"(sfa), "r"(sfb), "r"(accumulate));
}

/// Copies a 128x4 blocked scale tile (512 bytes at smem, 16-byte aligned) into TMEM columns
/// taddr..taddr+3 of all 128 lanes. Asynchronous; later tcgen05.mma of the same thread see it,
/// and tcgen05.commit covers its shared-memory reads. The writers of smem must have fenced
/// (fence.proxy.async.shared::cta) before the barrier this thread waited on.
__device__ __forceinline__ void tmem_cp_scales(uint32_t taddr, uint32_t smem) {
  asm volatile("tcgen05.cp.cta_group::1.32x128b.warpx4 [%0], %1;\n" ::"r"(taddr),
               "l"(umma_desc_rows16(smem))
               : "memory");
}

}  // namespace ws
