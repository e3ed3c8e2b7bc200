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
# Expressions: every quoted string of the plans that parses as one is worth a seed.
mkdir -p "$out/corpus/fuzz_expr"
grep -ho '"[^"]*"' "${kernels[@]}" "$root"/problems/*/spec.json 2>/dev/null | tr -d '"' |
  grep -E '^[A-Za-z0-9_ ()*/+%<>=!&|,-]+$' | sort -u | head -2000 |
  while IFS= read -r e; do
    printf '%s' "$e" > "$out/corpus/fuzz_expr/$(printf '%s' "$e" | md5sum | cut -c1-16)"
  done
# LLM replies: the first byte picks protocol and path (fuzz_llm.cc).
llm=$out/corpus/fuzz_llm; mkdir -p "$llm"
printf '\x00%s' '{"id":"c","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"x","tool_calls":[{"id":"t","type":"function","function":{"name":"compile","arguments":"{\"source\":\"a\"}"}}]}}],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":2}}}' > "$llm/openai_body"
printf '\x02%s' '{"id":"m","type":"message","role":"assistant","stop_reason":"tool_use","content":[{"type":"text","text":"x"},{"type":"tool_use","id":"t","name":"compile","input":{"source":"a"}}],"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":2}}' > "$llm/anthropic_body"
printf '\x03%s' '{"error":{"message":"slow down","type":"rate_limit"}}' > "$llm/openai_error"
printf '\x06%s' 'data: {"choices":[{"index":0,"delta":{"content":"hi","tool_calls":[{"index":0,"id":"t","function":{"name":"compile","arguments":"{\"so"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"urce\":1}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}

data: [DONE]

' > "$llm/openai_stream"
printf '\x08%s' 'event: message_start
data: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":3,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"compile","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"source\":"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"a\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}

event: message_stop
data: {"type":"message_stop"}

' > "$llm/anthropic_stream"
# .npy: a small valid file of each dtype the reader is asked for.
python3 - "$out/corpus/fuzz_npy" <<'PY'
import struct, sys, os
d = sys.argv[1]; os.makedirs(d, exist_ok=True)
for name, descr, n, item in [("bf16", "<u2", 6, 2), ("u8", "|u1", 8, 1), ("i32", "<i4", 4, 4),
                             ("f32", "<f4", 3, 4)]:
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, n)
    hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
    with open(os.path.join(d, name), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + bytes(n * item))
PY
# HTTP requests for the dashboard, one per route, the actions with the fixture's token.
http=$out/corpus/fuzz_serve; mkdir -p "$http"
n=0
for target in / /leaderboard '/leaderboard?problem=toy' /api/leaderboard /problems/toy \
              /api/problems/toy /kernels/1 /kernels/3 /api/kernels/2 /campaigns /campaigns/1 \
              /api/campaigns/1 /static/style.css '/kernels/%31' /nope; do
  printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' "$target" > "$http/get$((n++))"
done
for action in /api/campaigns/1/stop /api/kernels/1/reverify; do
  printf 'POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer fuzz-token\r\nContent-Length: 0\r\n\r\n' \
    "$action" > "$http/post$((n++))"
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
