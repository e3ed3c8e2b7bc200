#!/usr/bin/env python3
"""Where mxfp8_scales_to_blocked's time goes: per-CTA phase stamps (%globaltimer) of the kernel.

Copies kernels/mxfp8_scales_to_blocked/kernel.cu with thread 0 of each CTA stamping four points
of its unit (entry; the stripe found; the rows in shared memory, after the barrier; the tile
stores issued), builds bench/profile/scales_phases.cu around it with nvcc, and runs it at the
bench shapes. Each stamp depends on the value the phase produced, so it waits for that value's
load. Per shape, one JSON line: the event time of the stamped kernel and of a plain stream of
the same bytes (both after an L2 flush, median of 50), and each phase's [min, p10, p50, p90,
max] over the CTAs in us (start and end: from the first CTA's entry).
Usage (GPU machine, repository root): bench/profile/scales_phases.py OUT.jsonl [-DKNOB=V ...]
       bench/profile/scales_phases.py --build-only BINARY   (the build check)
NVCC: the compiler (default nvcc on PATH)."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNEL = os.path.join(ROOT, "kernels/mxfp8_scales_to_blocked/kernel.cu")
SHAPES = [(131072, 7168, 8), (131072, 2048, 8), (131072, 2048, 128), (131072, 5120, 16),
          (65536, 2880, 128), (65536, 2880, 1), (131072, 2048, 1)]

STAMP = r'''
__device__ unsigned long long g_stamps[1 << 20];
// Thread 0's %globaltimer, read once `dep` is available (the asm's input orders it after the
// load that produced dep).
__device__ __forceinline__ void ws_stamp(int i, int dep) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) : "r"(dep) : "memory");
  if (threadIdx.x == 0) g_stamps[blockIdx.x * 4 + i] = t;
}
'''

# (text in kernel.cu, text to put in its place): the stamp points.
POINTS = [
    ("namespace {", STAMP + "namespace {"),
    ("  const int tid = threadIdx.x, lane = tid & 31;\n  const int c4 = (C + 3) / 4;\n",
     "  ws_stamp(0, 0);\n  const int tid = threadIdx.x, lane = tid & 31;\n"
     "  const int c4 = (C + 3) / 4;\n"),
    ("  const int rows = src.rows;\n", "  const int rows = src.rows;\n  ws_stamp(1, rows);\n"),
    ("  __syncthreads();\n"
     "  store_tiles<kThreads>(out, s, t0, nt, rows, C, pitch, smem_words, raw);\n",
     "  __syncthreads();\n  ws_stamp(2, smem_words[0]);\n"
     "  store_tiles<kThreads>(out, s, t0, nt, rows, C, pitch, smem_words, raw);\n"
     "  ws_stamp(3, 0);\n"),
]


def stamped(src):
    for old, new in POINTS:
        if src.count(old) != 1:
            raise ValueError(f"stamp point not found once in kernel.cu: {old.strip()[:60]!r}")
        src = src.replace(old, new)
    return src


def build(binary, defines):
    with tempfile.TemporaryDirectory() as tmp:
        k = os.path.join(tmp, "kernel_stamped.cu")
        with open(KERNEL) as f:
            text = stamped(f.read())
        with open(k, "w") as f:
            f.write(text)
        cmd = [os.environ.get("NVCC", "nvcc"), "-O3", "-std=c++17", "-arch=sm_90a",
               "-I" + os.path.join(ROOT, "kernels/include"), f'-DKERNEL_FILE="{k}"', *defines,
               os.path.join(ROOT, "bench/profile/scales_phases.cu"), "-o", binary]
        subprocess.run(cmd, check=True)


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--build-only":
        build(args[1], [])
        return 0
    if not args or args[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    out, defines = args[0], args[1:]
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "scales_phases")
        build(binary, defines)
        with open(out, "w") as f:
            for m, k, g in SHAPES:
                line = subprocess.run([binary, str(m), str(k), str(g)], check=True,
                                      capture_output=True, text=True).stdout.strip()
                print(line)
                f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
