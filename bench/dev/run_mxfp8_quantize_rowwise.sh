#!/usr/bin/env bash
# Builds and runs the mxfp8_quantize_rowwise development harness on an H200 (sm_90a), then the
# Triton peer, then disassembles kernel.cu for sm_90a and sm_100a. Results land in $OUT:
#   harness.log/json, triton.log/json, sass_sm90a.txt, sass_sm100a.txt,
#   dev-mxfp8_quantize_rowwise-h200-<date>.json (everything merged).
# Usage (repo root): OUT=/some/dir bench/dev/run_mxfp8_quantize_rowwise.sh [--compile-only] [--no-sweep]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/ws_mxfp8_out}
BUILD=${BUILD:-/tmp/ws_mxfp8_build}
CUDA=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$OUT" "$BUILD"
export PATH="$CUDA/bin:$PATH"

g++ -std=c++20 -O2 -I. -c problems/mxfp8_quantize_rowwise/reference.cc -o "$BUILD/reference.o" || exit 1
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I. \
  bench/dev/mxfp8_quantize_rowwise_dev.cu "$BUILD/reference.o" -lnvrtc -o "$BUILD/mxfp8_dev" || exit 1

# nvcc cubins of the tuned kernel (default knobs) for both arches and both modes: SASS evidence.
for arch in 90a 100a; do
  for r in 0 1; do
    nvcc -cubin -O3 -gencode=arch=compute_$arch,code=sm_$arch -Xptxas=-v -DWS_ROUNDING=$r \
      kernels/mxfp8_quantize_rowwise/kernel.cu -o "$BUILD/kernel_sm${arch}_r$r.cubin" 2>&1 | grep -E "registers|error" || exit 1
  done
done
if command -v cuobjdump >/dev/null; then
  for arch in 90a 100a; do
    { for r in 0 1; do
        echo "=== kernel.cu sm_$arch WS_ROUNDING=$r: conversion / memory instructions"
        cuobjdump -sass "$BUILD/kernel_sm${arch}_r$r.cubin" |
          grep -E "F2FP|LDG|STG" | sed -E 's@/\*[0-9a-f]{4}\*/@@; s@/\* 0x[0-9a-f]+ \*/@@; s/^ *//; s/ +$//' |
          awk '{ i = ($1 ~ /^@/) ? 2 : 1; print $i }' | sort | uniq -c | sort -rn
      done
      echo "=== full SASS, sm_$arch WS_ROUNDING=0"
      cuobjdump -sass "$BUILD/kernel_sm${arch}_r0.cubin"
    } > "$OUT/sass_sm$arch.txt"
  done
  grep -E "UE8M0|E4M3" "$OUT/sass_sm100a.txt" | head -8
else
  echo "cuobjdump not found: no SASS dump"
fi

"$BUILD/mxfp8_dev" --repo . --out "$OUT" --cubin-dir "$BUILD" --cuda-include "$CUDA/include" "$@" 2>&1 | tee "$OUT/harness.log"
rc=${PIPESTATUS[0]}
case " $* " in *" --compile-only "*) exit $rc ;; esac

PYTHONUNBUFFERED=1 python3 bench/dev/triton_mxfp8_quantize_rowwise.py "$BUILD/cubins.json" 2>&1 | tee "$OUT/triton.log"
python3 bench/dev/merge_mxfp8_quantize_rowwise.py "$OUT" "bench/dev/run_mxfp8_quantize_rowwise.sh $*"
exit $rc
