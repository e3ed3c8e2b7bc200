#!/usr/bin/env python3
# Generates reference.cu / baseline.cu / starting.cu of the GEMM problems from one tiled template,
# so the twenty-odd kernels that differ only in operand types, scales and indexing stay one design.
# Edit this file, not the generated .cu files; `--check` (a unit test) fails when they drift.
# Usage: scripts/gen_gemm_kernels.py [--check]
import json, os, sys
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'problems')
CHECK = '--check' in sys.argv[1:]
STALE = []


def emit(path, text):
    # With --check, compare instead of writing.
    if CHECK:
        try:
            same = open(path).read() == text
        except OSError:
            same = False
        if not same:
            STALE.append(os.path.relpath(path, os.path.join(ROOT, '..')))
    else:
        open(path, 'w').write(text)

TEMPLATE = r'''/* warpsmith:plan
{PLAN}
*/
{HEADER}
#include <cuda_bf16.h>
{FP8_INCLUDE}{MACROS}
#ifndef BM
#define BM {BM}
#endif
#ifndef BN
#define BN {BN}
#endif
#ifndef BK
#define BK {BK}
#endif
#ifndef TM
#define TM {TM}
#endif
#ifndef TN
#define TN {TN}
#endif

namespace {{

constexpr int kBM = BM, kBN = BN, kBK = BK, kTM = TM, kTN = TN;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);
{SCALE_CONST}
static_assert(kBM % kTM == 0 && kBN % kTN == 0, "a whole number of micro-tiles per tile");
static_assert(kThreads >= 1 && kThreads <= 1024, "threads per block");
static_assert(kBK * (kBM + kBN) * 4 <= 48 * 1024, "static shared memory");

{VALUE_HELPER}
}}  // namespace

// {KERNEL_DOC}
extern "C" __global__ void __launch_bounds__(kThreads) {KERNEL}(
    {PARAMS}) {{
{SETUP}
  const long long row0 = static_cast<long long>(blockIdx.y) * kBM;
  const long long col0 = static_cast<long long>(blockIdx.x) * kBN;
  if (row0 >= rows || col0 >= cols) return;
  __shared__ float As[kBK][kBM];
  __shared__ float Bs[kBK][kBN];
  const int tid = threadIdx.x;
  const int tr = tid / (kBN / kTN), tc = tid % (kBN / kTN);
  float acc[kTM][kTN];
{PART_DECL}
#pragma unroll
  for (int i = 0; i < kTM; ++i) {{
#pragma unroll
    for (int j = 0; j < kTN; ++j) {{
      acc[i][j] = 0.0f;
{PART_ZERO}
    }}
  }}
  for (long long k0 = 0; k0 < depth; k0 += kBK) {{
    // Consecutive threads take consecutive contraction indices of one row.
    for (int i = tid; i < kBM * kBK; i += kThreads) {{
      const long long r = row0 + i / kBK, k = k0 + i % kBK;
      As[i % kBK][i / kBK] = r < rows && k < depth ? {LOAD_A} : 0.0f;
    }}
    for (int i = tid; i < kBN * kBK; i += kThreads) {{
      const long long c = col0 + i / kBK, k = k0 + i % kBK;
      Bs[i % kBK][i / kBK] = c < cols && k < depth ? {LOAD_B} : 0.0f;
    }}
    __syncthreads();
#pragma unroll 4
    for (int kk = 0; kk < kBK; ++kk) {{
      float av[kTM], bv[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) av[i] = As[kk][tr * kTM + i];
#pragma unroll
      for (int j = 0; j < kTN; ++j) bv[j] = Bs[kk][tc * kTN + j];
#pragma unroll
      for (int i = 0; i < kTM; ++i) {{
#pragma unroll
        for (int j = 0; j < kTN; ++j) {ACC}[i][j] = fmaf(av[i], bv[j], {ACC}[i][j]);
      }}
    }}
{PROMOTE}
    __syncthreads();
  }}
#pragma unroll
  for (int i = 0; i < kTM; ++i) {{
#pragma unroll
    for (int j = 0; j < kTN; ++j) {{
      const long long r = row0 + tr * kTM + i, c = col0 + tc * kTN + j;
      if (r < rows && c < cols)
        {STORE}
    }}
  }}
}}
'''

BF16_HELPER = r'''
// The exact value of a bf16 bit pattern.
__device__ __forceinline__ float bf16_value(unsigned short b) {
  return __uint_as_float(static_cast<unsigned>(b) << 16);
}
'''

FP8_HELPER = r'''
// The exact value of an E4M3 byte (NaN for S.1111.111), through the exact fp16 conversion.
__device__ __forceinline__ float e4m3_value(unsigned char q) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(q, __NV_E4M3)));
}
'''

def promote_mx(scale_a, scale_b):
    # scale_a / scale_b: expressions of the E8M0 byte for row r / column c of block kb.
    return r'''    // Every 32 contraction elements (one MX block): the block's partial sum times both scales,
    // 2^(Sa-127) * 2^(Sb-127) applied as one exact power of two, into the fp32 accumulator.
    if ((k0 + kBK) % kScaleBlock == 0 || k0 + kBK >= depth) {
      const long long kb = k0 / kScaleBlock;
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
        const long long r = row0 + tr * kTM + i;
        const int sa = r < rows ? static_cast<int>(SCALE_A) : 127;
#pragma unroll
        for (int j = 0; j < kTN; ++j) {
          const long long c = col0 + tc * kTN + j;
          const int sb = c < cols ? static_cast<int>(SCALE_B) : 127;
          const bool nan = sa == 0xFF || sb == 0xFF;
          acc[i][j] += nan ? __int_as_float(0x7FC00000) : ldexpf(part[i][j], sa + sb - 254);
          part[i][j] = 0.0f;
        }
      }
    }'''.replace('SCALE_A', scale_a).replace('SCALE_B', scale_b)

def promote_ds():
    return r'''    // Every 128 contraction elements (one scale block): promotion of the fp32 partial sum, times
    // the activation's 1x128 scale and the weight's 128x128 scale, into the accumulator.
    if ((k0 + kBK) % kScaleBlock == 0 || k0 + kBK >= depth) {
      const long long kb = k0 / kScaleBlock;
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
        const long long r = row0 + tr * kTM + i;
        const float sa = r < rows ? a_scales[kb * M + s + r] : 0.0f;
#pragma unroll
        for (int j = 0; j < kTN; ++j) {
          const long long c = col0 + tc * kTN + j;
          const float sb = c < cols ? b_scales[(g * (N / 128) + c / 128) * (K / 128) + kb] : 0.0f;
          acc[i][j] += part[i][j] * sa * sb;
          part[i][j] = 0.0f;
        }
      }
    }'''

GROUP_SETUP = r'''  // Group g (blockIdx.z) holds rows [s, e) of the token dimension.
  const long long g = blockIdx.z;
  const long long s = g == 0 ? 0 : offs[g - 1], e = offs[g];'''

P = {}

P['bf16_gemm'] = dict(
  kernel='sm90_bf16_gemm_{v}', fp8=False, scaled=None,
  params='const unsigned short* __restrict__ a, const unsigned short* __restrict__ b,\n    __nv_bfloat16* __restrict__ d, int M, int N, int K',
  args=['a', 'b', 'd', 'M', 'N', 'K'],
  grid=['ceil_div(N, BN)', 'ceil_div(M, BM)'],
  setup='  const long long rows = M, cols = N, depth = K;',
  load_a='bf16_value(a[r * K + k])', load_b='bf16_value(b[c * K + k])',
  store='d[r * N + c] = __float2bfloat16_rn(acc[i][j]);',
  doc='d [M,N] = a [M,K] * b [N,K]^T, bf16 in and out, fp32 accumulation.')

P['fp8_rowwise_gemm'] = dict(
  kernel='sm90_fp8_rowwise_gemm_{v}', fp8=True, scaled=None,
  params='const unsigned char* __restrict__ a, const unsigned char* __restrict__ b,\n    const float* __restrict__ a_scale, const float* __restrict__ b_scale,\n    __nv_bfloat16* __restrict__ d, int M, int N, int K',
  args=['a', 'b', 'a_scale', 'b_scale', 'd', 'M', 'N', 'K'],
  grid=['ceil_div(N, BN)', 'ceil_div(M, BM)'],
  setup='  const long long rows = M, cols = N, depth = K;',
  load_a='e4m3_value(a[r * K + k])', load_b='e4m3_value(b[c * K + k])',
  store='d[r * N + c] = __float2bfloat16_rn(acc[i][j] * a_scale[r] * b_scale[c]);',
  doc='d [M,N] = (a [M,K] * b [N,K]^T) * a_scale[m] * b_scale[n]; e4m3 in, bf16 out, fp32 accumulation.')

P['bf16_grouped_gemm'] = dict(
  kernel='sm90_bf16_grouped_gemm_{v}', fp8=False, scaled=None, form=True,
  params='const unsigned short* __restrict__ a, const unsigned short* __restrict__ b,\n    const int* __restrict__ offs, __nv_bfloat16* __restrict__ out, int M, int E, int N, int K',
  args=['a', 'b', 'offs', 'out', 'M', 'E', 'N', 'K'],
  grid=['ceil_div((form == 0) * N + (form != 0) * K, BN)', 'ceil_div((form == 2) * N + (form != 2) * M, BM)', 'E'],
  setup=GROUP_SETUP + r'''
#if WS_FORM == 0  // fwd: out[s+r, c] = sum_k a[s+r, k] * b[g, c, k]
  const long long rows = e - s, cols = N, depth = K;
#elif WS_FORM == 1  // dgrad: out[s+r, c] = sum_n a[s+r, n] * b[g, n, c]
  const long long rows = e - s, cols = K, depth = N;
#else  // wgrad: out[g, r, c] = sum_{t in [s, e)} a[t, r] * b[t, c]
  const long long rows = N, cols = K, depth = e - s;
#endif''',
  load_a='LOAD_A(r, k)', load_b='LOAD_B(c, k)',
  macros=r'''
#ifndef WS_FORM
#error "compile with -DWS_FORM (the problem's form parameter)"
#endif
#if WS_FORM == 0
#define LOAD_A(r, k) bf16_value(a[(s + (r)) * K + (k)])
#define LOAD_B(c, k) bf16_value(b[(g * N + (c)) * K + (k)])
#define OUT_INDEX(r, c) ((s + (r)) * N + (c))
#elif WS_FORM == 1
#define LOAD_A(r, k) bf16_value(a[(s + (r)) * N + (k)])
#define LOAD_B(c, k) bf16_value(b[(g * N + (k)) * K + (c)])
#define OUT_INDEX(r, c) ((s + (r)) * K + (c))
#else
#define LOAD_A(r, k) bf16_value(a[(s + (k)) * N + (r)])
#define LOAD_B(c, k) bf16_value(b[(s + (k)) * K + (c)])
#define OUT_INDEX(r, c) ((g * N + (r)) * K + (c))
#endif
''',
  store='out[OUT_INDEX(r, c)] = __float2bfloat16_rn(acc[i][j]);',
  doc='the three forms of spec.json (WS_FORM: 0 fwd, 1 dgrad, 2 wgrad); blockIdx.z is the group.')

P['mxfp8_grouped_gemm_fwd'] = dict(
  kernel='sm90_mxfp8_grouped_gemm_fwd_{v}', fp8=True, scaled='mx',
  params='const unsigned char* __restrict__ a, const unsigned char* __restrict__ a_scales,\n    const unsigned char* __restrict__ b, const unsigned char* __restrict__ b_scales,\n    const int* __restrict__ offs, __nv_bfloat16* __restrict__ c_out, int M, int E, int N, int K',
  args=['a', 'a_scales', 'b', 'b_scales', 'offs', 'c', 'M', 'E', 'N', 'K'],
  grid=['ceil_div(N, BN)', 'ceil_div(M, BM)', 'E'],
  setup=GROUP_SETUP + '\n  const long long rows = e - s, cols = N, depth = K;',
  load_a='e4m3_value(a[(s + r) * K + k])', load_b='e4m3_value(b[(g * N + c) * K + k])',
  scale_a='a_scales[(s + r) * (K / 32) + kb]', scale_b='b_scales[(g * N + c) * (K / 32) + kb]',
  store='c_out[(s + r) * N + c] = __float2bfloat16_rn(acc[i][j]);',
  doc='c [M,N] = MX(a [M,K]) * MX(b [g,N,K])^T per group g (blockIdx.z).')

P['mxfp8_grouped_gemm_dgrad'] = dict(
  kernel='sm90_mxfp8_grouped_gemm_dgrad_{v}', fp8=True, scaled='mx',
  params='const unsigned char* __restrict__ dc, const unsigned char* __restrict__ dc_scales,\n    const unsigned char* __restrict__ bt, const unsigned char* __restrict__ bt_scales,\n    const int* __restrict__ offs, __nv_bfloat16* __restrict__ da, int M, int E, int N, int K',
  args=['dc', 'dc_scales', 'bt', 'bt_scales', 'offs', 'da', 'M', 'E', 'N', 'K'],
  grid=['ceil_div(K, BN)', 'ceil_div(M, BM)', 'E'],
  setup=GROUP_SETUP + '\n  const long long rows = e - s, cols = K, depth = N;',
  load_a='e4m3_value(dc[(s + r) * N + k])', load_b='e4m3_value(bt[(g * K + c) * N + k])',
  scale_a='dc_scales[(s + r) * (N / 32) + kb]', scale_b='bt_scales[(g * K + c) * (N / 32) + kb]',
  store='da[(s + r) * K + c] = __float2bfloat16_rn(acc[i][j]);',
  doc='da [M,K] = MX(dc [M,N]) * MX(bt [g,K,N])^T per group g (blockIdx.z): contraction over N.')

P['mxfp8_grouped_gemm_wgrad'] = dict(
  kernel='sm90_mxfp8_grouped_gemm_wgrad_{v}', fp8=True, scaled='mx',
  params='const unsigned char* __restrict__ dct, const unsigned char* __restrict__ dct_scales,\n    const unsigned char* __restrict__ xt, const unsigned char* __restrict__ xt_scales,\n    const int* __restrict__ offs, float* __restrict__ db, int M, int E, int N, int K',
  args=['dct', 'dct_scales', 'xt', 'xt_scales', 'offs', 'db', 'M', 'E', 'N', 'K'],
  grid=['ceil_div(K, BN)', 'ceil_div(N, BM)', 'E'],
  setup=GROUP_SETUP + '\n  // Contraction over the group\'s tokens; an empty group writes zeros.\n  const long long rows = N, cols = K, depth = e - s;',
  load_a='e4m3_value(dct[r * M + s + k])', load_b='e4m3_value(xt[c * M + s + k])',
  scale_a='dct_scales[r * (M / 32) + s / 32 + kb]', scale_b='xt_scales[c * (M / 32) + s / 32 + kb]',
  store='db[(g * N + r) * K + c] = acc[i][j];',
  doc='db [g,N,K] = MX(dct [N, s:e]) * MX(xt [K, s:e])^T per group g (blockIdx.z), f32 out.')

P['fp8_blockwise_grouped_gemm'] = dict(
  kernel='sm90_fp8_blockwise_grouped_gemm_{v}', fp8=True, scaled='ds',
  params='const unsigned char* __restrict__ a, const float* __restrict__ a_scales,\n    const unsigned char* __restrict__ b, const float* __restrict__ b_scales,\n    const int* __restrict__ offs, __nv_bfloat16* __restrict__ c_out, int M, int E, int N, int K',
  args=['a', 'a_scales', 'b', 'b_scales', 'offs', 'c', 'M', 'E', 'N', 'K'],
  grid=['ceil_div(N, BN)', 'ceil_div(M, BM)', 'E'],
  setup=GROUP_SETUP + '\n  const long long rows = e - s, cols = N, depth = K;',
  load_a='e4m3_value(a[(s + r) * K + k])', load_b='e4m3_value(b[(g * N + c) * K + k])',
  store='c_out[(s + r) * N + c] = __float2bfloat16_rn(acc[i][j]);',
  doc='c [M,N] = sum over 128-blocks j of a_scales[j, m] * b_scales[g, n/128, j] * (a * b^T)_j.')

VARIANTS = {
  'reference': dict(BM=64, BN=64, BK=16, TM=4, TN=4, knobs=None),
  'baseline': dict(BM=128, BN=128, BK=32, TM=8, TN=8, knobs=None),
}

HEADERS = {
  'reference': '''// Trusted GPU reference for {name}: a plain shared-memory tiled GEMM (64x64 output
// tile, 4x4 per thread), products in fp32 summed in contraction order with fmaf{scaled_note}.
// Slow by design and never tuned; checked against the fp64 CPU reference by
// `warpsmith problems verify`.
''',
  'baseline': '''// Baseline for {name}: the shared-memory tiled fp32 GEMM a competent CUDA user writes
// first: 128x128 output tiles, 8x8 outputs per thread in registers, 32-deep shared-memory slabs,
// CUDA-core fmaf, fp32 accumulation{scaled_note}. Correct, not tuned: no tensor cores, scalar
// loads, no pipelining.
''',
  'starting': '''// Starting kernel for {name}: a register-blocked shared-memory tiled GEMM with fp32
// accumulation{scaled_note}.
// Knobs: BM x BN output tile per block, TM x TN outputs per thread ((BM/TM)*(BN/TN) threads), BK
// contraction elements per shared-memory slab. CUDA cores only: the way up is tensor cores
// (wgmma on sm_90a, tcgen05 on sm_100a), TMA and pipelining.
''',
}

SCALED_NOTES = {
  None: '',
  'mx': '.\n// Every 32-element MX block\'s fp32 partial sum is scaled by 2^(Sa-127) * 2^(Sb-127) exactly\n// (ldexpf) and added to the fp32 accumulator',
  'ds': '.\n// Every 128-element block\'s fp32 partial sum is promoted: times the 1x128 activation scale\n// and the 128x128 weight scale, added to the fp32 accumulator',
}

def plan_json(cfg, var):
    v = VARIANTS[var]
    knobs = v['knobs'] or {k: [v[k]] for k in ['BM', 'BN', 'BK', 'TM', 'TN']}
    if cfg.get('scaled'):
        # BK must divide the scale block (32 or 128).
        knobs = dict(knobs)
    kn = ', '.join('"%s": %s' % (k, json.dumps(vals)) for k, vals in knobs.items())
    launch = '{ "kernel": "%s",\n                "grid": %s,\n                "block": ["(BM / TM) * (BN / TN)"], "smem": "0",\n                "args": %s }' % (
        cfg['kernel'].format(v=var if var != 'starting' else 'tiled'), jlist(cfg['grid'], 24), jlist(cfg['args'], 30))
    return '{ "knobs":  { %s },\n  "launch": [ %s ] }' % (kn, launch)

import textwrap
def wrap_comment(text):
    out = []
    para = []
    def flush():
        if para:
            out.extend('// ' + l for l in textwrap.wrap(' '.join(para), 97))
            para.clear()
    for line in text.split('\n'):
        if line.startswith('//   ') or line == '//' or line.startswith('// Evaluate'):
            flush()
            out.append(line)
        elif line.startswith('// '):
            para.append(line[3:])
        else:
            flush()
            out.append(line)
    flush()
    return '\n'.join(out)

def jlist(items, indent):
    one = json.dumps(items)
    if len(one) + indent <= 98:
        return one
    return '[' + (',\n' + ' ' * (indent + 1)).join(json.dumps(x) for x in items) + ']'

def render(name, var):
    cfg = P[name]
    v = VARIANTS[var]
    scaled = cfg.get('scaled')
    header = HEADERS[var].format(name=name, scaled_note=SCALED_NOTES[scaled])
    if var == 'starting':
        header += '//\n// Evaluate:\n//   build/warpsmith eval %s problems/%s/starting.cu\n' % (name, name)
    scale_const = ''
    part_decl = ''
    part_zero = ''
    acc = 'acc'
    promote = ''
    if scaled:
        blk = 32 if scaled == 'mx' else 128
        scale_const = 'constexpr int kScaleBlock = %d;  // contraction elements per scale\nstatic_assert(kScaleBlock %% kBK == 0, "slabs never straddle a scale block");' % blk
        part_decl = '  float part[kTM][kTN];  // the current scale block\'s partial sums'
        part_zero = '      part[i][j] = 0.0f;'
        acc = 'part'
        promote = promote_mx(cfg['scale_a'], cfg['scale_b']) if scaled == 'mx' else promote_ds()
    kernel = cfg['kernel'].format(v=var if var != 'starting' else 'tiled')
    text = TEMPLATE.format(
        MACROS=cfg.get('macros', ''), PLAN=plan_json(cfg, var), HEADER=wrap_comment(header.rstrip('\n')),
        FP8_INCLUDE='#include <cuda_fp16.h>\n#include <cuda_fp8.h>\n' if cfg['fp8'] else '',
        BM=v['BM'], BN=v['BN'], BK=v['BK'], TM=v['TM'], TN=v['TN'],
        SCALE_CONST=scale_const, VALUE_HELPER=FP8_HELPER if cfg['fp8'] else BF16_HELPER,
        KERNEL_DOC=cfg['doc'], KERNEL=kernel, PARAMS=cfg['params'], SETUP=cfg['setup'],
        PART_DECL=part_decl, PART_ZERO=part_zero, LOAD_A=cfg['load_a'], LOAD_B=cfg['load_b'],
        ACC=acc, PROMOTE=promote, STORE=cfg['store'])
    import re
    return re.sub(r'\n{3,}', '\n\n', text)

for name in P:
    for var in VARIANTS:
        path = os.path.join(ROOT, name, var + '.cu')
        emit(path, render(name, var))

# ---- The tensor-core starting kernels (WMMA, bf16 operands in shared memory) ------------------

WMMA_TEMPLATE = r'''/* warpsmith:plan
{PLAN}
*/
{HEADER}
#include <cuda_bf16.h>
{FP8_INCLUDE}{MACROS}
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif

namespace {{

constexpr int kBM = BM, kBN = BN, kBK = BK, kWM = WM, kWN = WN;
constexpr int kThreads = 32 * (kBM / kWM) * (kBN / kWN);
constexpr int kFM = kWM / 16, kFN = kWN / 8;  // m16n8 tiles per warp
constexpr int kLd = kBK + 8;                  // padded smem row: conflict-free fragment loads
{PROMOTE_CONST}
static_assert(kBM % kWM == 0 && kBN % kWN == 0 && kWM % 16 == 0 && kWN % 8 == 0, "warp tiles");
static_assert(kBK % 16 == 0, "whole k16 steps");
static_assert(kThreads <= 1024, "threads per block");
static_assert((kBM + kBN) * kLd * 2 <= 48 * 1024, "static shared memory: lower BK or the tile");
{VALUE_HELPER}
// Two bf16 at p (4-byte aligned) as one register.
__device__ __forceinline__ unsigned pair(const __nv_bfloat16* p) {{
  return *reinterpret_cast<const unsigned*>(p);
}}

// c (16x8 fp32) += a (16x16 bf16, row-major) * b (16x8 bf16, column-major), one warp.
__device__ __forceinline__ void mma_bf16(float* c, unsigned a0, unsigned a1, unsigned a2,
                                         unsigned a3, unsigned b0, unsigned b1) {{
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{%0, %1, %2, %3}}, "
      "{{%4, %5, %6, %7}}, {{%8, %9}}, {{%0, %1, %2, %3}};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}}

}}  // namespace

// {KERNEL_DOC}
extern "C" __global__ void __launch_bounds__(kThreads) {KERNEL}(
    {PARAMS}) {{
{SETUP}
  const long long row0 = static_cast<long long>(blockIdx.y) * kBM;
  const long long col0 = static_cast<long long>(blockIdx.x) * kBN;
  if (row0 >= rows || col0 >= cols) return;
  __shared__ __align__(16) __nv_bfloat16 As[kBM][kLd];
  __shared__ __align__(16) __nv_bfloat16 Bs[kBN][kLd];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wr = warp / (kBN / kWN), wc = warp % (kBN / kWN);
  const int gid = lane / 4, tig = lane % 4;  // the mma fragment layout's group and thread
  // Accumulator element q of tile (i, j) is row wr*WM + i*16 + gid + 8*(q/2),
  // column wc*WN + j*8 + 2*tig + q%2 of the block tile.
  float acc[kFM][kFN][4], part[kFM][kFN][4];
#pragma unroll
  for (int i = 0; i < kFM; ++i) {{
#pragma unroll
    for (int j = 0; j < kFN; ++j) {{
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;
    }}
  }}
  for (long long kb0 = 0; kb0 < depth; kb0 += kPromote) {{
#pragma unroll
    for (int i = 0; i < kFM; ++i) {{
#pragma unroll
      for (int j = 0; j < kFN; ++j) {{
#pragma unroll
        for (int q = 0; q < 4; ++q) part[i][j][q] = 0.0f;
      }}
    }}
    const long long kend = kb0 + kPromote < depth ? kb0 + kPromote : depth;
    for (long long k0 = kb0; k0 < kend; k0 += kBK) {{
      // Operands to bf16 in shared memory (exact: see the header), zero outside the problem.
      for (int i = tid; i < kBM * kBK; i += kThreads) {{
        const long long r = row0 + i / kBK, k = k0 + i % kBK;
        float v = 0.0f;
        if (r < rows && k < kend)
          v = {LOAD_A};
        As[i / kBK][i % kBK] = __float2bfloat16_rn(v);
      }}
      for (int i = tid; i < kBN * kBK; i += kThreads) {{
        const long long c = col0 + i / kBK, k = k0 + i % kBK;
        float v = 0.0f;
        if (c < cols && k < kend)
          v = {LOAD_B};
        Bs[i / kBK][i % kBK] = __float2bfloat16_rn(v);
      }}
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kBK; kk += 16) {{
        unsigned a[kFM][4], b[kFN][2];
#pragma unroll
        for (int i = 0; i < kFM; ++i) {{
          const int r = wr * kWM + i * 16 + gid;
          a[i][0] = pair(&As[r][kk + 2 * tig]);
          a[i][1] = pair(&As[r + 8][kk + 2 * tig]);
          a[i][2] = pair(&As[r][kk + 2 * tig + 8]);
          a[i][3] = pair(&As[r + 8][kk + 2 * tig + 8]);
        }}
#pragma unroll
        for (int j = 0; j < kFN; ++j) {{
          const int c = wc * kWN + j * 8 + gid;
          b[j][0] = pair(&Bs[c][kk + 2 * tig]);
          b[j][1] = pair(&Bs[c][kk + 2 * tig + 8]);
        }}
#pragma unroll
        for (int i = 0; i < kFM; ++i) {{
#pragma unroll
          for (int j = 0; j < kFN; ++j) {{
            mma_bf16(part[i][j], a[i][0], a[i][1], a[i][2], a[i][3], b[j][0], b[j][1]);
          }}
        }}
      }}
      __syncthreads();
    }}
    // Promotion: the block's fp32 partial sums into the accumulators{PROMOTE_NOTE}.
#pragma unroll
    for (int i = 0; i < kFM; ++i) {{
#pragma unroll
      for (int j = 0; j < kFN; ++j) {{
#pragma unroll
        for (int q = 0; q < 4; ++q) {{
          const long long r = row0 + wr * kWM + i * 16 + gid + 8 * (q / 2);
          const long long c = col0 + wc * kWN + j * 8 + 2 * tig + q % 2;
          acc[i][j][q] += part[i][j][q]{PROMOTE_SCALE};
        }}
      }}
    }}
  }}
#pragma unroll
  for (int i = 0; i < kFM; ++i) {{
#pragma unroll
    for (int j = 0; j < kFN; ++j) {{
#pragma unroll
      for (int q = 0; q < 4; ++q) {{
        const long long r = row0 + wr * kWM + i * 16 + gid + 8 * (q / 2);
        const long long c = col0 + wc * kWN + j * 8 + 2 * tig + q % 2;
        if (r < rows && c < cols)
          {STORE}
      }}
    }}
  }}
}}
'''

WMMA_HEADER = '''// Starting kernel for {name}: a plain tensor-core tiled GEMM (mma.sync m16n8k16, bf16 in,
// fp32 accumulate, the Ampere-style instruction both sm_90a and sm_100a run). Each block stages a
// BM x BK slab of A and a BN x BK slab of B in shared memory as bf16; each warp owns a WM x WN
// piece of the BM x BN output tile as m16n8 tiles in registers; partial sums are promoted into
// fp32 accumulators {promote_when}. {operands}
// Knobs: BM, BN (block tile), BK (slab depth), WM, WN (warp tile). No pipelining, no TMA, no
// wgmma/tcgen05, element-wise global loads: the way up is sm_90a wgmma (or tcgen05 on sm_100a)
// fed by TMA with a multi-stage pipeline.
//
// Evaluate:
//   build/warpsmith eval {name} problems/{name}/starting.cu
'''

WMMA_OPERANDS = {
  None: 'bf16 operands are used as they are.',
  'fp8': 'E4M3 values are exact in bf16.',
  'mx': 'MX operands are dequantized into bf16 with the E8M0 scale folded in (e4m3 * 2^(S-127)): exact while the result stays within bf16\'s range (scales from about 2^-124 to 2^120, which covers this problem\'s inputs), so the products are the MX products and only the accumulation order differs.',
  'ds': 'E4M3 values are exact in bf16; the fp32 scales are applied at the promotion every 128 contraction elements, as DeepGEMM does.',
}

WMMA_MX_LOADS = {
  'mxfp8_grouped_gemm_fwd': ('ldexpf(e4m3_value(a[(s + r) * K + k]), a_scales[(s + r) * (K / 32) + k / 32] - 127)',
                             'ldexpf(e4m3_value(b[(g * N + c) * K + k]), b_scales[(g * N + c) * (K / 32) + k / 32] - 127)'),
  'mxfp8_grouped_gemm_dgrad': ('ldexpf(e4m3_value(dc[(s + r) * N + k]), dc_scales[(s + r) * (N / 32) + k / 32] - 127)',
                               'ldexpf(e4m3_value(bt[(g * K + c) * N + k]), bt_scales[(g * K + c) * (N / 32) + k / 32] - 127)'),
  'mxfp8_grouped_gemm_wgrad': ('ldexpf(e4m3_value(dct[r * M + s + k]), dct_scales[r * (M / 32) + (s + k) / 32] - 127)',
                               'ldexpf(e4m3_value(xt[c * M + s + k]), xt_scales[c * (M / 32) + (s + k) / 32] - 127)'),
}

def render_wmma(name):
    cfg = P[name]
    scaled = cfg.get('scaled')
    kind = scaled if scaled else ('fp8' if cfg['fp8'] else None)
    header = WMMA_HEADER.format(
        name=name,
        promote_when='every 128 contraction elements' if scaled == 'ds' else 'once, after the whole contraction',
        operands=WMMA_OPERANDS[kind])
    load_a, load_b = cfg['load_a'], cfg['load_b']
    if scaled == 'mx':
        load_a, load_b = (x.replace('), ', '),\n                     ', 1) for x in WMMA_MX_LOADS[name])
    if scaled == 'ds':
        promote_const = 'constexpr long long kPromote = 128;  // DeepSeek-V3 scale blocks along K\nstatic_assert(kPromote % kBK == 0, "slabs never straddle a scale block");'
        promote_scale = (' *\n                            (r < rows ? a_scales[(kb0 / 128) * M + s + r] : 0.0f) *\n'
                         '                            (c < cols ? b_scales[(g * (N / 128) + c / 128) * (K / 128) +\n'
                         '                                                 kb0 / 128]\n'
                         '                                      : 0.0f)')
        promote_note = ',\n    // times the 1x128 and 128x128 scales'
    else:
        promote_const = 'constexpr long long kPromote = 1ll << 62;  // one promotion, at the end'
        promote_scale = ''
        promote_note = ''
    knobs = {'BM': [128, 64], 'BN': [128, 64], 'BK': [32, 64], 'WM': [64, 32], 'WN': [32, 16]}
    kn = ', '.join('"%s": %s' % (k, json.dumps(v)) for k, v in knobs.items())
    kernel = cfg['kernel'].format(v='mma')
    launch = '{ "kernel": "%s",\n                "grid": %s,\n                "block": ["32 * (BM / WM) * (BN / WN)"], "smem": "0",\n                "args": %s }' % (
        kernel, jlist(cfg['grid'], 24), jlist(cfg['args'], 30))
    plan = '{ "knobs":  { %s },\n  "launch": [ %s ] }' % (kn, launch)
    text = WMMA_TEMPLATE.format(
        PLAN=plan, HEADER=wrap_comment(header.rstrip('\n')),
        FP8_INCLUDE='#include <cuda_fp16.h>\n#include <cuda_fp8.h>\n' if cfg['fp8'] else '',
        MACROS=cfg.get('macros', ''), PROMOTE_CONST=promote_const,
        VALUE_HELPER=FP8_HELPER if cfg['fp8'] else BF16_HELPER,
        KERNEL_DOC=cfg['doc'], KERNEL=kernel, PARAMS=cfg['params'], SETUP=cfg['setup'],
        LOAD_A=load_a, LOAD_B=load_b, PROMOTE_NOTE=promote_note, PROMOTE_SCALE=promote_scale,
        STORE=cfg['store'].replace('acc[i][j]', 'acc[i][j][q]'))
    import re
    return re.sub(r'\n{3,}', '\n\n', text)

for name in P:
    emit(os.path.join(ROOT, name, 'starting.cu'), render_wmma(name))

if STALE:
    print('stale generated kernels (run scripts/gen_gemm_kernels.py): ' + ', '.join(STALE))
    sys.exit(1)
print('GEMM kernels %s' % ('up to date' if CHECK else 'written'))
