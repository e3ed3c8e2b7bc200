#!/usr/bin/env bash
# GPU self-test of ws_runner, for the GPU machine (CUDA toolkit, python3 with numpy).
#
#   evaluator/runner/gpu_selftest.sh [BUILD_DIR]     (default: build, else build-runner)
#
# Builds tiny test kernels with nvcc (sm_90a), runs `ws_runner devices`, two `run` jobs and `probe`,
# and checks: outputs equal the inputs the device generated; the device generator matches
# problems/init.h compiled on the host bit for bit (all input dtypes); poison, workspace zeroing,
# i32/i64 arguments, clusters and >48 KiB dynamic shared memory; plausible timings and audit/last
# dumps from the right input sets; launch errors (missing kernel, bad block, wrong argument
# count); a guard violation; a kernel that modifies its input; a wild pointer (crashed, exit 4,
# earlier cases kept); a bad job (exit 2); plausible probe ceilings. Prints PASS/FAIL per check and
# exits non-zero on any failure. About a minute of GPU time.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-}
if [[ -z "$BUILD" ]]; then
  BUILD=$ROOT/build
  [[ -x $BUILD/ws_runner ]] || BUILD=$ROOT/build-runner
fi
RUNNER=$BUILD/ws_runner
NVCC=${NVCC:-$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ws_runner_selftest.XXXXXX")
echo "ws_runner self-test: runner $RUNNER, scratch $WORK"

FAILS=0
fail_now() { echo "FAIL: $*"; echo "SUMMARY: FAIL (setup)"; exit 1; }
check_rc() {  # name want got
  if [[ "$2" == "$3" ]]; then echo "PASS: $1 (exit $3)"; else echo "FAIL: $1: exit $3, want $2"; FAILS=$((FAILS + 1)); fi
}

[[ -x $RUNNER ]] || fail_now "no runner at $RUNNER"
[[ -x $NVCC ]] || fail_now "no nvcc ($NVCC)"
python3 -c "import numpy" || fail_now "python3 with numpy is needed"

# ---- Test kernels --------------------------------------------------------------------------------
cat > "$WORK/kernels.cu" <<'EOF'
typedef unsigned short u16;
#define TID (blockIdx.x * (long long)blockDim.x + threadIdx.x)
#define STRIDE ((long long)gridDim.x * blockDim.x)

extern "C" __global__ void copy(const u16* x, u16* y, long long n) {
  for (long long i = TID; i < n; i += STRIDE) y[i] = x[i];
}
// Copies x, flipping every bit if the workspace is not zero (it must be zeroed before each run).
extern "C" __global__ void copy_ws(const u16* x, u16* y, const unsigned* ws, int ws_words,
                                   long long n) {
  for (long long i = TID; i < n; i += STRIDE) y[i] = ws[i % ws_words] ? (u16)~x[i] : x[i];
}
// Needs the runner's cluster launch attribute and its dynamic shared memory opt-in.
extern "C" __global__ void cluster_copy(const u16* x, u16* y, int* ranks, long long n) {
  extern __shared__ unsigned char smem[];
  unsigned nct;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(nct));
  smem[threadIdx.x] = 1;
  smem[100 * 1024 - 1 - threadIdx.x] = 2;
  __syncthreads();
  if (threadIdx.x == 0) ranks[blockIdx.x] = nct * (smem[100 * 1024 - 1] == 2);
  for (long long i = TID; i < n; i += STRIDE) y[i] = x[i];
}
extern "C" __global__ void write_past(const u16* x, u16* y, long long n) {
  for (long long i = TID; i < n; i += STRIDE) y[i] = x[i];
  if (TID == 0) y[n] = 0x1234;  // one element past the end
}
extern "C" __global__ void modify_input(u16* x, u16* y, long long n) {
  for (long long i = TID; i < n; i += STRIDE) y[i] = x[i];
  if (TID == 0) x[0] ^= 1;
}
extern "C" __global__ void wild_pointer(const u16* x, u16* y, long long n) {
  *reinterpret_cast<volatile int*>(0xdead00000000ull) = 1;
}
EOF
"$NVCC" -cubin -gencode=arch=compute_90a,code=sm_90a -o "$WORK/kernels.cubin" "$WORK/kernels.cu" \
  || fail_now "nvcc could not build the test kernels"

# The host generator: problems/init.h compiled as plain C++ (the device's values must match).
cat > "$WORK/gen.cc" <<'EOF'
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "problems/init.h"
// gen DTYPE DIST P0 P1 SEED TENSOR_INDEX NUMEL OUT: writes the raw bytes of the tensor.
int main(int argc, char** argv) {
  if (argc != 9) return 2;
  int dtype = atoi(argv[1]), dist = atoi(argv[2]), t = atoi(argv[6]);
  float p0 = strtof(argv[3], nullptr), p1 = strtof(argv[4], nullptr);
  unsigned long long seed = strtoull(argv[5], nullptr, 10);
  long long n = atoll(argv[7]);
  int size = ws_dtype_size(dtype);
  std::vector<unsigned char> out(n * size);
  for (long long i = 0; i < n; ++i) {
    unsigned long long b = ws_init_element(dtype, dist, p0, p1, seed, t, i);
    for (int k = 0; k < size; ++k) out[i * size + k] = (unsigned char)(b >> (8 * k));
  }
  FILE* f = fopen(argv[8], "wb");
  if (!f || fwrite(out.data(), 1, out.size(), f) != out.size()) return 1;
  return fclose(f) != 0;
}
EOF
CXX=${CXX:-$(command -v g++ || command -v c++ || true)}
if [[ -n "$CXX" ]]; then
  "$CXX" -std=c++17 -O2 -I"$ROOT" -o "$WORK/gen" "$WORK/gen.cc" || fail_now "cannot build gen"
else
  "$NVCC" -x c++ -std=c++17 -O2 -I"$ROOT" -o "$WORK/gen" "$WORK/gen.cc" || fail_now "cannot build gen"
fi

# ---- Jobs and checks (python) --------------------------------------------------------------------
cat > "$WORK/selftest.py" <<'EOF'
import json, os, subprocess, sys
import numpy as np

mode, work = sys.argv[1], sys.argv[2]
P = lambda *a: os.path.join(work, *a)
POISON = 0xA5
SEEDS = [11, 18446744073709551557, 1234567]  # one beyond 2^63: seeds are uint64
X = {"name": "x", "dtype": "bf16", "role": "input",
     "init": {"dist": "mx_blocks", "mean": 0, "stddev": 1, "lo": -1, "hi": 1}}
DTYPE = {"bf16": (0, 2), "f32": (1, 4), "f16": (2, 2), "fp8_e4m3": (3, 1), "i32": (7, 4),
         "u8": (6, 1)}
DIST = {"normal": 0, "uniform": 1, "mx_blocks": 2}

def case(cid, kernel, args, tensors, grid=(264, 1, 1), block=(256, 1, 1), **kw):
  c = {"id": cid, "launches": [{"kernel": kernel, "grid": list(grid), "block": list(block),
                                "cluster": list(kw.pop("cluster", (1, 1, 1))),
                                "smem": kw.pop("smem", 0), "args": args}],
       "workspace": kw.pop("workspace", {"bytes": 0, "zero": False}),
       "tensors": tensors, "input_seeds": kw.pop("seeds", SEEDS[:1]), "poison": POISON,
       "timing": kw.pop("timing", None), "dump": P("dump-" + cid),
       "dump_inputs": kw.pop("dump_inputs", False)}
  assert not kw
  return c

def T(name, dtype, numel, role="output", **init):
  t = {"name": name, "dtype": dtype, "numel": numel, "role": role}
  if init: t["init"] = init
  return t

def tens(x_numel, y_numel=None):
  return [dict(X, numel=x_numel), T("y", "bf16", x_numel if y_numel is None else y_numel)]

A_ = [{"tensor": "x"}, {"tensor": "y"}]
N_CHECK, N_TIMED = (1 << 20) + 33, 8 << 20

if mode == "jobs":
  dev = json.load(open(P("devices.json")))["devices"][0]
  extra = [T("u", "f32", 100003, "input", dist="uniform", lo=-2, hi=5),
           T("n", "f16", 100003, "input", dist="normal", mean=1, stddev=3),
           T("e", "fp8_e4m3", 100003, "input", dist="normal", mean=0, stddev=100),
           T("k", "i32", 100003, "input", dist="uniform", lo=-1000, hi=1000),
           T("untouched", "u8", 1000)]
  a = {"cubin": P("kernels.cubin"), "result": P("a.result.json"), "cases": [
      case("check", "copy_ws", A_ + [{"workspace": True}, {"i32": 1024}, {"i64": N_CHECK}],
           tens(N_CHECK) + extra, workspace={"bytes": 4096, "zero": True}, dump_inputs=True),
      case("timed", "copy", A_ + [{"i64": N_TIMED}], tens(N_TIMED), seeds=SEEDS,
           timing={"warmup": 3, "iterations": 20, "audit_iteration": 6,
                   "l2_flush_bytes": 2 * dev["l2_bytes"]}),
      case("cluster", "cluster_copy", A_ + [{"tensor": "ranks"}, {"i64": N_CHECK}],
           tens(N_CHECK) + [T("ranks", "i32", 264)], cluster=(2, 1, 1), smem=100 * 1024),
      case("missing", "no_such_kernel", A_ + [{"i64": 1}], tens(64)),
      case("bad_block", "copy", A_ + [{"i64": 64}], tens(64), block=(4096, 1, 1)),
      case("arg_count", "copy", A_, tens(64)),
      case("guard", "write_past", A_ + [{"i64": 1000}], tens(1000)),
      case("modify", "modify_input", A_ + [{"i64": 1000}], tens(1000)),
  ]}
  b = {"cubin": P("kernels.cubin"), "result": P("b.result.json"), "cases": [
      case("before", "copy", A_ + [{"i64": 1000}], tens(1000)),
      case("wild", "wild_pointer", A_ + [{"i64": 1000}], tens(1000)),
      case("after", "copy", A_ + [{"i64": 1000}], tens(1000)),
  ]}
  json.dump(a, open(P("a.job.json"), "w"), indent=1)
  json.dump(b, open(P("b.job.json"), "w"), indent=1)
  sys.exit(0)

# ---- verify ----
fails = 0
def ok(cond, what, detail=""):
  global fails
  print(("PASS: " if cond else "FAIL: ") + what + ("" if cond or not detail else ": " + str(detail)))
  fails += 0 if cond else 1
  return cond

def load(path):
  try:
    return json.load(open(path))
  except Exception as e:
    ok(False, "read " + path, e)
    return None

def raw(path):
  if not os.path.exists(path):
    ok(False, "read " + path)
    return np.zeros(0, dtype=np.uint8)
  return np.fromfile(path, dtype=np.uint8)

def generated(t, seed, tensor_index):
  out = P("gen-%s-%d-%d-%d.bin" % (t["name"], seed, tensor_index, t["numel"]))
  if not os.path.exists(out):
    code, _ = DTYPE[t["dtype"]]
    init = t.get("init", {})
    dist = init.get("dist", "normal")
    p0, p1 = (init.get("lo", -1), init.get("hi", 1)) if dist == "uniform" else \
             (init.get("mean", 0), init.get("stddev", 1))
    subprocess.run([P("gen"), str(code), str(DIST[dist]), repr(float(p0)), repr(float(p1)),
                    str(seed), str(tensor_index), str(t["numel"]), out], check=True)
  return raw(out)

def same(got, want, what):
  if got.shape != want.shape:
    return ok(False, what, "size %d, want %d" % (got.size, want.size))
  bad = np.nonzero(got != want)[0]
  return ok(bad.size == 0, what, "%d bytes differ, first at byte %s" % (bad.size, bad[:5]))

def by_id(res):
  return {c["id"]: c for c in (res or {}).get("cases", [])}

jobs = {k: json.load(open(P(k + ".job.json"))) for k in ("a", "b")}
rc = {k: int(open(P(k + ".rc")).read()) for k in ("a", "b")}
A, B = by_id(load(P("a.result.json"))), by_id(load(P("b.result.json")))
ja = {c["id"]: c for c in jobs["a"]["cases"]}

# devices
dev = load(P("devices.json"))["devices"][0]
ok(set(["name", "cc", "arch", "driver", "num_sms", "l2_bytes", "memory_bytes",
        "max_threads_per_block", "max_smem_per_block", "max_grid"]) <= set(dev), "devices: fields")
ok(dev["cc"] >= 90 and dev["arch"].startswith("sm_") and dev["l2_bytes"] > 0, "devices: values",
   dev)

# check: copy with workspace, every input dtype against the host generator, poison
c = A.get("check", {})
ok(c.get("status") == "ok" and c.get("guards_intact") and c.get("inputs_unchanged"),
   "check: status ok", c)
ok(c.get("dumps", {}).get("check") == {"set": 0}, "check: dumps", c.get("dumps"))
pre = ja["check"]["dump"]
for idx, t in enumerate(ja["check"]["tensors"]):
  if t["role"] == "input":
    same(raw(pre + ".input.%s.bin" % t["name"]), generated(t, SEEDS[0], idx),
         "check: device-generated %s (%s, %s) equals init.h on the host" %
         (t["name"], t["dtype"], t["init"]["dist"]))
same(raw(pre + ".check.y.bin"), raw(pre + ".input.x.bin"), "check: output y equals input x "
     "(workspace zeroed, i32/i64 arguments)")
u = raw(pre + ".check.untouched.bin")
ok(u.size == 1000 and np.all(u == POISON), "check: an unwritten output holds the poison byte")
x = generated(ja["check"]["tensors"][0], SEEDS[0], 0).view(np.uint16)
mag = x & 0x7FFF
ok(np.any(mag == 0x7F80) and np.any(mag > 0x7F80) and np.any(mag == 0x7F7F) and
   np.any((mag < 0x80) & (mag > 0)) and np.any(x == 0x8000),
   "check: mx_blocks input holds Inf, NaN, bf16 max, subnormals and -0")

# timed: stats, plausibility, audit/last dumps from the right sets
c = A.get("timed", {})
ok(c.get("status") == "ok", "timed: status ok", c.get("message"))
tm = c.get("timing") or {}
ts = tm.get("times_us", [])
ok(len(ts) == 20, "timed: 20 iterations timed", len(ts))
if ts:
  ok(tm["min_us"] <= tm["median_us"] <= tm["p90_us"] and tm["min_us"] == min(ts) and
     abs(tm["median_us"] - float(np.median(ts))) < 1e-6, "timed: statistics", tm)
  moved = 2 * 2 * N_TIMED  # bytes read + written
  bound = moved / 5.5e12 * 1e6  # no H200 moves more than ~4.8 TB/s
  ok(bound < tm["median_us"] < 5000, "timed: median %.2f us is plausible (> %.2f us)" %
     (tm["median_us"], bound))
  print("INFO: copy of %d MiB: median %.2f us = %.2f TB/s (read+write)" %
        (moved >> 20, tm["median_us"], moved / tm["median_us"] / 1e6))
d = c.get("dumps", {})
ok(d.get("audit") == {"set": 0, "iteration": 6} and d.get("last") == {"set": 1, "iteration": 19},
   "timed: audit and last dumps name their set and iteration", d)
pre, xt = ja["timed"]["dump"], ja["timed"]["tensors"][0]
same(raw(pre + ".check.y.bin"), generated(xt, SEEDS[0], 0), "timed: check output (set 0)")
same(raw(pre + ".audit.y.bin"), generated(xt, SEEDS[0], 0), "timed: audit output (set 0)")
same(raw(pre + ".last.y.bin"), generated(xt, SEEDS[1], 0), "timed: last output (set 1)")
ok(len(c.get("input_hashes", {}).get("x", [])) == 3 and
   len(set(c["input_hashes"]["x"])) == 3, "timed: three distinct input set hashes")

# cluster launch with >48 KiB dynamic shared memory
c = A.get("cluster", {})
ok(c.get("status") == "ok", "cluster: status ok", c.get("message"))
if c.get("status") == "ok":
  r = raw(ja["cluster"]["dump"] + ".check.ranks.bin").view(np.int32)
  ok(np.all(r == 2), "cluster: every block saw a 2-CTA cluster and its smem", r[:8])
  same(raw(ja["cluster"]["dump"] + ".check.y.bin"),
       generated(ja["cluster"]["tensors"][0], SEEDS[0], 0), "cluster: output")

def expect(res, cid, status, words, **flags):
  c = res.get(cid, {})
  msg = c.get("message", "")
  good = c.get("status") == status and all(w in msg for w in words) and \
         all(c.get(k) == v for k, v in flags.items())
  ok(good, "%s: %s (%s)" % (cid, status, msg), c)

expect(A, "missing", "launch_error", ["no_such_kernel"])
expect(A, "bad_block", "launch_error", ["CUDA_ERROR_INVALID_VALUE", "copy"])
expect(A, "arg_count", "launch_error", ["takes 3 parameters", "passes 2"])
expect(A, "guard", "guard_violation", ["output 'y'", "after"], guards_intact=False)
expect(A, "modify", "ok", ["input 'x'"], inputs_unchanged=False)
ok(rc["a"] == 0, "job a: exit 0", rc["a"])

# crash: exit 4, the case before it kept, none after it
expect(B, "before", "ok", [])
expect(B, "wild", "crashed", ["CUDA_ERROR", "wild_pointer"])
ok("after" not in B, "crash: the runner stopped after the crashed case")
ok(rc["b"] == 4, "job b: exit 4", rc["b"])

# probe
p = load(P("probe.json")) or {}
ok(1.5e12 < p.get("copy_bytes_per_s", 0) < 1.2e13, "probe: copy bandwidth %.3g B/s" %
   p.get("copy_bytes_per_s", 0))
ok(2e14 < p.get("bf16_flops_per_s", 0) < 2.5e15, "probe: BF16 rate %.3g FLOP/s" %
   p.get("bf16_flops_per_s", 0))
ok(4e14 < p.get("fp8_flops_per_s", 0) < 5e15 and "fp8_error" not in p,
   "probe: FP8 rate %.3g FLOP/s" % p.get("fp8_flops_per_s", 0), p.get("fp8_error"))
sys.exit(1 if fails else 0)
EOF

# ---- Run -----------------------------------------------------------------------------------------
timeout 60 "$RUNNER" devices > "$WORK/devices.json" 2> "$WORK/devices.err"
rc=$?
check_rc "devices" 0 $rc
[[ $rc == 0 ]] || fail_now "devices: $(cat "$WORK/devices.err")"
echo "INFO: $(cat "$WORK/devices.json")"
python3 "$WORK/selftest.py" jobs "$WORK" || fail_now "could not write the jobs"

for j in a b; do
  start=$(date +%s%N)
  timeout 300 "$RUNNER" run "$WORK/$j.job.json" 2> "$WORK/$j.err"
  echo $? > "$WORK/$j.rc"
  echo "INFO: job $j: exit $(cat "$WORK/$j.rc") in $(( ($(date +%s%N) - start) / 1000000 )) ms;" \
    "stderr: $(head -c 500 "$WORK/$j.err")"
done

echo '{"cubin": 1' > "$WORK/bad.job.json"
timeout 60 "$RUNNER" run "$WORK/bad.job.json" 2> "$WORK/bad.err"
check_rc "bad job JSON" 2 $?

timeout 300 "$RUNNER" probe > "$WORK/probe.json" 2> "$WORK/probe.err"
check_rc "probe" 0 $?
echo "INFO: probe: $(cat "$WORK/probe.json") $(head -c 500 "$WORK/probe.err")"

python3 "$WORK/selftest.py" verify "$WORK" || FAILS=$((FAILS + 1))

if [[ $FAILS == 0 ]]; then
  echo "SUMMARY: PASS (scratch $WORK)"
  exit 0
fi
echo "SUMMARY: FAIL ($FAILS failing step(s); scratch $WORK)"
exit 1
