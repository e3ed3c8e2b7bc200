// Keyed 128-bit output digests (docs/runner-protocol.md, "digest"): a bench shape's exact outputs
// are compared as digests instead of bytes. The key is drawn per evaluation and reaches the
// device only as an argument of the hash kernel, after the candidate's launches have completed.
//
// Digest of n bytes under key k: the bytes as little-endian 8-byte words w[i] (the last partial
// word zero-padded), and per lane L in {0, 1}
//   sum_L = sum over i of ws_digest_term(L, k, i, w[i])    (mod 2^64)
//   d_L   = ws_digest_final(L, k, n, sum_L)
// Each term is a keyed function of (position, word): a changed byte changes its word's term to
// an unpredictable value in both lanes, and moving a word changes its index.
//
// Self-contained like problems/init.h: the runner hands this text to NVRTC (after init.h, whose
// WS_HD it reuses when present) and host code includes it as plain C++.
#ifndef WS_EVALUATOR_RUNNER_DIGEST_H_
#define WS_EVALUATOR_RUNNER_DIGEST_H_

#ifndef WS_HD
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WS_HD __host__ __device__
#else
#define WS_HD
#endif
#endif

/// splitmix64's finalizer (lane 0).
WS_HD inline unsigned long long ws_digest_mix0(unsigned long long z) {
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z;
}

/// MurmurHash3's fmix64 (lane 1): other constants and shifts, so the lanes are independent.
WS_HD inline unsigned long long ws_digest_mix1(unsigned long long z) {
  z ^= z >> 33;
  z *= 0xFF51AFD7ED558CCDull;
  z ^= z >> 33;
  z *= 0xC4CEB9FE1A85EC53ull;
  z ^= z >> 33;
  return z;
}

/// The per-lane key derived from the evaluation's key.
WS_HD inline unsigned long long ws_digest_lane_key(int lane, unsigned long long key) {
  return lane == 0 ? ws_digest_mix0(key ^ 0x243F6A8885A308D3ull)
                   : ws_digest_mix1(key + 0x13198A2E03707344ull);
}

/// Word `index` holding `word`, in lane `lane` under lane key `lk` (ws_digest_lane_key).
WS_HD inline unsigned long long ws_digest_term(int lane, unsigned long long lk,
                                               unsigned long long index, unsigned long long word) {
  if (lane == 0) {
    const unsigned long long pos = ws_digest_mix0(lk ^ (index * 0x9E3779B97F4A7C15ull));
    return ws_digest_mix0(pos ^ word) + pos;
  }
  const unsigned long long pos = ws_digest_mix1(lk + index * 0xD6E8FEB86659FD93ull);
  return ws_digest_mix1((pos + word) ^ 0xA0761D6478BD642Full) ^ pos;
}

/// The lane's digest: the sum with the length and the key folded in (so trailing zero bytes and
/// an empty buffer count).
WS_HD inline unsigned long long ws_digest_final(int lane, unsigned long long key,
                                                unsigned long long nbytes, unsigned long long sum) {
  const unsigned long long lk = ws_digest_lane_key(lane, key);
  return lane == 0 ? ws_digest_mix0(sum ^ ws_digest_mix0(lk + nbytes))
                   : ws_digest_mix1(sum + ws_digest_mix1(lk ^ (nbytes * 0x9E3779B97F4A7C15ull)));
}

/// The little-endian word of the `count` (< 8) bytes at `p`, zero-padded.
WS_HD inline unsigned long long ws_digest_tail_word(const unsigned char* p, long long count) {
  unsigned long long w = 0;
  for (long long b = 0; b < count; ++b) w |= static_cast<unsigned long long>(p[b]) << (8 * b);
  return w;
}

#if !defined(__CUDACC_RTC__)
/// The host reference: the digest of `nbytes` bytes at `p` under `key` into out[0], out[1].
/// Serial; for tests and small buffers.
inline void ws_digest_host(const unsigned char* p, long long nbytes, unsigned long long key,
                           unsigned long long out[2]) {
  const long long words = nbytes / 8;
  for (int lane = 0; lane < 2; ++lane) {
    const unsigned long long lk = ws_digest_lane_key(lane, key);
    unsigned long long sum = 0;
    for (long long i = 0; i < words; ++i) {
      unsigned long long w = ws_digest_tail_word(p + 8 * i, 8);
      sum += ws_digest_term(lane, lk, static_cast<unsigned long long>(i), w);
    }
    if (nbytes % 8 != 0) {
      sum += ws_digest_term(lane, lk, static_cast<unsigned long long>(words),
                            ws_digest_tail_word(p + 8 * words, nbytes % 8));
    }
    out[lane] = ws_digest_final(lane, key, static_cast<unsigned long long>(nbytes), sum);
  }
}
#endif

#endif  // WS_EVALUATOR_RUNNER_DIGEST_H_
