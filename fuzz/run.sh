#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each, corpora seeded from the repository.
# Usage: fuzz/run.sh BUILD_DIR [SECONDS] [TARGET...]   (fuzz/README.md)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: fuzz/run.sh BUILD_DIR [SECONDS] [TARGET...]}" && pwd)
secs=${2:-60}
shift $(( $# >= 2 ? 2 : 1 ))
targets=("$@")
[ ${#targets[@]} -gt 0 ] ||
  targets=(fuzz_expr fuzz_plan fuzz_source_check fuzz_llm fuzz_spec fuzz_npy fuzz_serve)
out=$build/fuzz
# Targets that link the evaluator need libcuda.so.1 to load (never to run): on a machine without
# the driver, the toolkit's stub stands in.
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
  for stub in /usr/local/cuda/lib64/stubs/libcuda.so \
              /usr/local/cuda/targets/*/lib/stubs/libcuda.so; do
    if [ -f "$stub" ]; then
      mkdir -p "$out/stub" && ln -sf "$stub" "$out/stub/libcuda.so.1"
      export LD_LIBRARY_PATH="$out/stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      break
    fi
  done
fi
seed() {  # seed TARGET FILE...: copies files into the target's corpus
  local dir=$out/corpus/$1; shift
  mkdir -p "$dir"
  for f in "$@"; do [ -f "$f" ] && cp "$f" "$dir/$(echo "$f" | md5sum | cut -c1-16)"; done
  return 0
}
kernels=("$root"/kernels/*/kernel.cu "$root"/problems/*/starting.cu "$root"/problems/*/baseline.cu)
seed fuzz_plan "${kernels[@]}"
seed fuzz_source_check "${kernels[@]}" "$root"/tests/hostile/*.cu
seed fuzz_spec "$root"/problems/*/spec.json
# The hand-written seeds (LLM replies, HTTP requests, .npy files, expressions): fuzz/seeds/.
for dir in "$root"/fuzz/seeds/*/; do seed "$(basename "$dir")" "$dir"*; done
# Expressions: every quoted string of the plans and specs made only of expression characters.
mkdir -p "$out/corpus/fuzz_expr"
grep -ho '"[^"]*"' "${kernels[@]}" "$root"/problems/*/spec.json 2>/dev/null | tr -d '"' |
  grep -E '^[A-Za-z0-9_ ()*/+%<>=!&|,-]+$' | sort -u | head -2000 |
  while IFS= read -r e; do
    printf '%s' "$e" > "$out/corpus/fuzz_expr/$(printf '%s' "$e" | md5sum | cut -c1-16)"
  done
status=0
for t in "${targets[@]}"; do
  mkdir -p "$out/crashes/$t"
  echo "== $t ($secs s)"
  if ! "$out/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
       -artifact_prefix="$out/crashes/$t/" -print_final_stats=1 "$out/corpus/$t" \
       > "$out/$t.log" 2>&1; then
    echo "   FAILED: $(grep -m1 -E 'ERROR|runtime error|deadly signal|timeout' "$out/$t.log")"
    status=1
  fi
  grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$out/$t.log" | tail -1
done
exit $status
