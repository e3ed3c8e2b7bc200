// warpsmith device library: vector loads and stores as explicit PTX, for the memory-bound kernels.
// Inline asm fixes the instruction and its cache qualifiers, which a plain C++ access leaves to
// the compiler; the qualifiers are template parameters so a kernel's knob picks them at compile
// time. Every access is 16, 8 or 4 bytes and must be aligned to its size.
#pragma once

namespace ws {

constexpr unsigned kFullMask = 0xFFFFFFFFu;  // every lane of a warp, for the *_sync intrinsics

/// 16 bytes as four 32-bit words. As bf16 data: 8 elements, element 2i in the low half of w[i].
struct Chunk {
  unsigned w[4];
};

/// Cache qualifiers of a 16-byte global load. The values are those of the rowwise quantizer's
/// LOAD_HINT knob (kernels/mxfp8_quantize_rowwise, which measured them).
enum class LoadHint : int {
  kNc = 0,                  // ld.global.nc: the non-coherent (read-only) path
  kNcNoAllocate = 1,        // ld.global.nc.L1::no_allocate
  kNcNoAllocateL2_256 = 2,  // ld.global.nc.L1::no_allocate.L2::256B
  kPlain = 3,               // ld.global
  kNcL2_256 = 4,            // ld.global.nc.L2::256B
  kNcEvictFirst = 5,        // ld.global.nc.L1::evict_first
  kNcL2EvictFirst = 6,      // ld.global.nc with an L2 evict_first cache policy: streamed reads
                            // leave the L2 to the writes
};

/// 16 bytes from global memory. The .nc forms require that nothing writes p during the kernel.
/// volatile: the loads stay in program order, so a kernel that issues them all before their
/// first use keeps them all in flight.
template <LoadHint kHint = LoadHint::kNc>
__device__ __forceinline__ Chunk load_global16(const void* p) {
  Chunk c;
  if constexpr (kHint == LoadHint::kNc) {
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(c.w[0]), "=r"(c.w[1]), "=r"(c.w[2]), "=r"(c.w[3])
                 : "l"(p));
  } else if constexpr (kHint == LoadHint::kNcNoAllocate) {
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(c.w[0]), "=r"(c.w[1]), "=r"(c.w[2]), "=r"(c.w[3])
                 : "l"(p));
  } else if constexpr (kHint == LoadHint::kNcNoAllocateL2_256) {
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(c.w[0]), "=r"(c.w[1]), "=r"(c.w[2]), "=r"(c.w[3])
                 : "l"(p));
  } else if constexpr (kHint == LoadHint::kPlain) {
    asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(c.w[0]), "=r"(c.w[1]), "=r"(c.w[2]), "=r"(c.w[3])
                 : "l"(p));
  } else if constexpr (kHint == LoadHint::kNcL2_256) {
    asm volatile("ld.global.nc.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(c.w[0]), "=r"(c.w[1]), "=r"(c.w[2]), "=r"(c.w[3])
                 : "l"(p));
  } else if constexpr (kHint == LoadHint::kNcL2EvictFirst) {
    unsigned long long policy;  // not volatile: one createpolicy serves every load
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(c.w[0]), "=r"(c.w[1]), "=r"(c.w[2]), "=r"(c.w[3])
                 : "l"(p), "l"(policy));
  } else {
    asm volatile("ld.global.nc.L1::evict_first.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(c.w[0]), "=r"(c.w[1]), "=r"(c.w[2]), "=r"(c.w[3])
                 : "l"(p));
  }
  return c;
}

/// 8 bytes from global memory on the read-only path, as two words; kNoAllocate adds
/// L1::no_allocate (a stream read once). volatile for the same reason as load_global16.
template <bool kNoAllocate>
__device__ __forceinline__ void load_global8_nc(unsigned (&v)[2], const void* p) {
  if constexpr (kNoAllocate) {
    asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];"
                 : "=r"(v[0]), "=r"(v[1])
                 : "l"(p));
  } else {
    asm volatile("ld.global.nc.v2.u32 {%0, %1}, [%2];" : "=r"(v[0]), "=r"(v[1]) : "l"(p));
  }
}

/// One byte from global memory on the read-only path without allocating in L1 (a stream that
/// must not evict what other warps of the SM keep there).
__device__ __forceinline__ unsigned load_global_u8_no_l1(const unsigned char* p) {
  unsigned short v;
  asm volatile("ld.global.nc.L1::no_allocate.u8 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}

/// The L2 fetches p's line (and the address translation is made) ahead of a first use.
__device__ __forceinline__ void prefetch_l2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

/// 16 bytes to global memory; kStreaming adds .cs (evict first: bytes written once, not re-read).
template <bool kStreaming>
__device__ __forceinline__ void store_global16(void* p, unsigned a, unsigned b, unsigned c,
                                               unsigned d) {
  if constexpr (kStreaming) {
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(a), "r"(b), "r"(c),
                 "r"(d)
                 : "memory");
  } else {
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(a), "r"(b), "r"(c), "r"(d)
                 : "memory");
  }
}

template <bool kStreaming>
__device__ __forceinline__ void store_global16(void* p, const Chunk& c) {
  store_global16<kStreaming>(p, c.w[0], c.w[1], c.w[2], c.w[3]);
}

/// 8 bytes to global memory, lo at p; kStreaming adds .cs.
template <bool kStreaming>
__device__ __forceinline__ void store_global8(void* p, unsigned lo, unsigned hi) {
  if constexpr (kStreaming) {
    asm volatile("st.global.cs.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(lo), "r"(hi) : "memory");
  } else {
    asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(lo), "r"(hi) : "memory");
  }
}

/// Shared-memory accesses by 32-bit shared address (__cvta_generic_to_shared). The "memory"
/// clobber orders them against the other shared accesses around them.
__device__ __forceinline__ void store_shared16(unsigned addr, unsigned a, unsigned b, unsigned c,
                                               unsigned d) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(a), "r"(b), "r"(c),
               "r"(d)
               : "memory");
}

__device__ __forceinline__ void store_shared8(unsigned addr, unsigned lo, unsigned hi) {
  asm volatile("st.shared.v2.u32 [%0], {%1, %2};" ::"r"(addr), "r"(lo), "r"(hi) : "memory");
}

__device__ __forceinline__ Chunk load_shared16(unsigned addr) {
  Chunk c;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(c.w[0]), "=r"(c.w[1]), "=r"(c.w[2]), "=r"(c.w[3])
               : "r"(addr)
               : "memory");
  return c;
}

__device__ __forceinline__ unsigned load_shared4(unsigned addr) {
  unsigned v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

/// One byte (the low 8 bits of v) to / from shared memory.
__device__ __forceinline__ void store_shared1(unsigned addr, unsigned v) {
  asm volatile("st.shared.u8 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned char load_shared1(unsigned addr) {
  unsigned short v;
  asm volatile("ld.shared.u8 %0, [%1];" : "=h"(v) : "r"(addr) : "memory");
  return static_cast<unsigned char>(v);
}

}  // namespace ws
