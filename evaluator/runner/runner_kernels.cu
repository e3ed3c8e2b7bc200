// The runner's own device code: input generation, checksums, output digests and guard canaries.
// Not built by CMake: the runner hands NVRTC the text of problems/init.h, then
// evaluator/runner/digest.h, then this file (all embedded at build time) and compiles it once at
// start for the device's architecture.

// mx_blocks where every aligned 32-element run lies in one block (row blocks, or tiles of a
// multiple of 32 columns): a warp takes a span of 32 runs (1024 elements), each lane draws one
// run's block and finds its lane offset, and the 16 pairs of runs take theirs by shuffles, so a
// block's draw is made once per warp, not once per element. The values are ws_init_pair_p's.
template <typename T>
__device__ void ws_generate_mx_spans(T* out, long long numel, int dtype, const WsInitParams& init,
                                     unsigned long long seed, int tensor_index) {
  const long long tile_cols = init.n0 > 0 ? init.n0 : 0;
  const unsigned int t = threadIdx.x & 31u;
  const long long warps = static_cast<long long>(gridDim.x) * blockDim.x / 32;
  for (long long w = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
       w < (numel + 1023) / 1024; w += warps) {
    const unsigned long long span = static_cast<unsigned long long>(w) * 1024u;
    // Run t of the span starts at a block lane of 0 (row blocks) or row % 32 (tiles: its column
    // is a multiple of 32); element t of a run sits t lanes on.
    const WsMxLane run = ws_mx_lane(span + 32u * t, tile_cols);
    const unsigned long long run_draw = ws_draw(seed, tensor_index, run.block, kWsStreamBlock);
    const int run_kind = ws_mx_kind_of_draw(run_draw);
    for (unsigned int j = 0; j < 16; ++j) {
      const unsigned long long i = span + 64u * j + t;
      const unsigned long long b0 = __shfl_sync(0xFFFFFFFFu, run_draw, 2 * j);
      const unsigned long long b1 = __shfl_sync(0xFFFFFFFFu, run_draw, 2 * j + 1);
      const int k0 = __shfl_sync(0xFFFFFFFFu, run_kind, 2 * j);
      const int k1 = __shfl_sync(0xFFFFFFFFu, run_kind, 2 * j + 1);
      const unsigned int l0 = (__shfl_sync(0xFFFFFFFFu, run.lane, 2 * j) + t) & 31u;
      const unsigned int l1 = (__shfl_sync(0xFFFFFFFFu, run.lane, 2 * j + 1) + t) & 31u;
      if (static_cast<long long>(i) + 32 < numel) {
        const WsPairBits b = ws_mx_pair_of_draws(
            init, dtype, WsMxDraws{b0, l0, ws_draw(seed, tensor_index, i, 0)}, k0,
            WsMxDraws{b1, l1, ws_draw(seed, tensor_index, i + 32, 0)}, k1);
        out[i] = static_cast<T>(b.first);
        out[i + 32] = static_cast<T>(b.second);
      } else if (static_cast<long long>(i) < numel) {
        out[i] = static_cast<T>(ws_init_element_p(dtype, init, seed, tensor_index, i));
      }
    }
  }
}

// A thread per pair (elements i and i + 32, ws_init_pair_p): lane t of a warp takes t and t + 32
// of one 64-element group, so each of the warp's two stores covers 32 consecutive elements.
template <typename T>
__device__ void ws_generate_as(T* out, long long numel, int dtype, const WsInitParams& init,
                               unsigned long long seed, int tensor_index) {
  if (init.dist == kWsDistMxBlocks && (init.n0 <= 0 || init.n0 % 32 == 0)) {
    ws_generate_mx_spans(out, numel, dtype, init, seed, tensor_index);
    return;
  }
  const long long lanes = static_cast<long long>(gridDim.x) * blockDim.x;  // a multiple of 32
  for (long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       t < (numel + 63) / 64 * 32; t += lanes) {
    const long long i = t / 32 * 64 + t % 32;
    if (i + 32 < numel) {
      const WsPairBits b = ws_init_pair_p(dtype, init, seed, tensor_index,
                                          static_cast<unsigned long long>(i));
      out[i] = static_cast<T>(b.first);
      out[i + 32] = static_cast<T>(b.second);
    } else if (i < numel) {
      out[i] = static_cast<T>(
          ws_init_element_p(dtype, init, seed, tensor_index, static_cast<unsigned long long>(i)));
    }
  }
}

// Four 256-thread blocks per SM (64 registers): the pair path alone would take 74, and the
// kernel is issue-bound, so the warps to hide latency matter more than a few spilled registers.
extern "C" __global__ void __launch_bounds__(256, 4)
    ws_generate(unsigned char* out, long long numel, int dtype, WsInitParams init,
                unsigned long long seed, int tensor_index) {
  // Allocations are 256-byte aligned and elements are naturally aligned within them.
  switch (ws_dtype_size(dtype)) {
    case 1: ws_generate_as(out, numel, dtype, init, seed, tensor_index); break;
    case 2:
      ws_generate_as(reinterpret_cast<unsigned short*>(out), numel, dtype, init, seed,
                     tensor_index);
      break;
    case 4:
      ws_generate_as(reinterpret_cast<unsigned int*>(out), numel, dtype, init, seed, tensor_index);
      break;
    default:
      ws_generate_as(reinterpret_cast<unsigned long long*>(out), numel, dtype, init, seed,
                     tensor_index);
      break;
  }
}

// Adds sum over words of ws_hash_word(word, index) to *sum (mod 2^64). `p` must be 8-byte
// aligned; the last partial word is zero-padded (the host folds the length in).
extern "C" __global__ void ws_hash(const unsigned char* p, long long nbytes,
                                   unsigned long long* sum) {
  const long long words = nbytes >> 3;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned long long acc = 0;
  const unsigned long long* w = reinterpret_cast<const unsigned long long*>(p);
  for (long long i = tid; i < words; i += stride) {
    acc += ws_hash_word(w[i], static_cast<unsigned long long>(i));
  }
  if (tid == 0 && (nbytes & 7) != 0) {
    unsigned long long tail = 0;
    for (long long b = words * 8; b < nbytes; ++b) {
      tail |= static_cast<unsigned long long>(p[b]) << ((b - words * 8) * 8);
    }
    acc += ws_hash_word(tail, static_cast<unsigned long long>(words));
  }
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xFFFFFFFFu, acc, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(sum, acc);
}

// Adds each lane's sum of ws_digest_term over the words of `p` to sums[0], sums[1]
// (evaluator/runner/digest.h). `p` must be 8-byte aligned; the last partial word is zero-padded.
// The runner launches it only after the candidate's work has completed: `key` is a kernel
// argument of this kernel alone, so the candidate's code never sees it.
extern "C" __global__ void ws_digest(const unsigned char* p, long long nbytes,
                                     unsigned long long key, unsigned long long* sums) {
  const long long words = nbytes >> 3;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const unsigned long long k0 = ws_digest_lane_key(0, key), k1 = ws_digest_lane_key(1, key);
  const unsigned long long* w = reinterpret_cast<const unsigned long long*>(p);
  unsigned long long a0 = 0, a1 = 0;
  for (long long i = tid; i < words; i += stride) {
    const unsigned long long v = w[i];
    a0 += ws_digest_term(0, k0, static_cast<unsigned long long>(i), v);
    a1 += ws_digest_term(1, k1, static_cast<unsigned long long>(i), v);
  }
  if (tid == 0 && (nbytes & 7) != 0) {
    const unsigned long long v = ws_digest_tail_word(p + words * 8, nbytes & 7);
    a0 += ws_digest_term(0, k0, static_cast<unsigned long long>(words), v);
    a1 += ws_digest_term(1, k1, static_cast<unsigned long long>(words), v);
  }
  for (int off = 16; off > 0; off >>= 1) {
    a0 += __shfl_xor_sync(0xFFFFFFFFu, a0, off);
    a1 += __shfl_xor_sync(0xFFFFFFFFu, a1, off);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&sums[0], a0);
    atomicAdd(&sums[1], a1);
  }
}

// Guard regions: blockIdx.y picks the region; region r starts at ptrs[r], holds `bytes` bytes
// and is salted with salts[r].
extern "C" __global__ void ws_guard_fill(const unsigned long long* ptrs,
                                         const unsigned long long* salts, long long bytes) {
  unsigned char* p = reinterpret_cast<unsigned char*>(ptrs[blockIdx.y]);
  const unsigned long long salt = salts[blockIdx.y];
  for (long long j = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; j < bytes;
       j += static_cast<long long>(gridDim.x) * blockDim.x) {
    p[j] = ws_canary_byte(salt, static_cast<unsigned long long>(j));
  }
}

// Lowers first_bad[r] to the offset of the first damaged byte of region r (it starts at ~0).
extern "C" __global__ void ws_guard_check(const unsigned long long* ptrs,
                                          const unsigned long long* salts, long long bytes,
                                          unsigned long long* first_bad) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(ptrs[blockIdx.y]);
  const unsigned long long salt = salts[blockIdx.y];
  for (long long j = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; j < bytes;
       j += static_cast<long long>(gridDim.x) * blockDim.x) {
    if (p[j] != ws_canary_byte(salt, static_cast<unsigned long long>(j))) {
      atomicMin(&first_bad[blockIdx.y], static_cast<unsigned long long>(j));
    }
  }
}

// Evicts the L2 by reading `words` 16-byte words. Reading leaves clean lines behind, so the timed
// kernel that follows pays for no write-back of someone else's dirty lines. The store never
// happens in practice (the buffer is zeroed) but the compiler cannot know that.
extern "C" __global__ void ws_l2_flush(const ulonglong2* buf, long long words,
                                       unsigned long long* sink) {
  unsigned long long acc = 0;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const ulonglong2 v = buf[i];
    acc ^= v.x ^ v.y;
  }
  if (acc == 0x5157a11ab1e5eedULL) *sink = acc;
}

// The fp8_rowwise_gemm library baseline where cuBLASLt has no outer-vector scales
// (evaluator/runner/library_baselines.h): d[m,n] = bf16_rne(acc[m,n] * a_scale[m] * b_scale[n]),
// row-major, NaN as 0x7FC0.
extern "C" __global__ void ws_outer_scale_bf16(const float* acc, const float* a_scale,
                                               const float* b_scale, unsigned short* d,
                                               long long m, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < m * n;
       i += stride) {
    const float v = __fmul_rn(__fmul_rn(acc[i], a_scale[i / n]), b_scale[i % n]);
    unsigned int b = __float_as_uint(v);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) {
      d[i] = 0x7FC0;
      continue;
    }
    b += 0x7FFFu + ((b >> 16) & 1u);  // round to nearest even; overflow carries to Inf
    d[i] = static_cast<unsigned short>(b >> 16);
  }
}
