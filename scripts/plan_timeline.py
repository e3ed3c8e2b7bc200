#!/usr/bin/env python3
"""A plan's launches inside the evaluator's timed graph, from %globaltimer stamps.

nsys is not on the GPU machines and ncu runs launches one at a time, so neither shows how a
plan's launches overlap in the stream (programmatic launches waiting on their predecessors) or
how long a single launch ramps up and drains. This writes an instrumented copy of a kernel file:
every extern "C" __global__ kernel of the plan stamps, per CTA, its start (thread 0, after a
barrier at entry) and its end (the CTA's last thread to leave the body, counted in shared memory),
and each ws::griddep_wait() in a kernel body its return. The stamps go to per-SM slots (atomicMax of the time for the latest, of its complement
for the earliest), so no one address takes every CTA's atomics. The last CTA of a launch (a
counter over the grid) folds the slots into the launch's five figures and clears them; CTA 0 of
the next run of the same kernel prints them before it stamps its own start, so no print falls
inside a measured window.

Limit: the instrumented plan is not the plain one where a launch waits for the previous one's
completion. On an H100 the dual quantizer's gather launch (griddepcontrol.wait at entry, its
predecessor never triggering early) started 32-40 us after the quantize launch's last CTA
ended, and the instrumented run took ~200 us where the plain plan takes 79 us (session 46). The
slot fold was ruled out (unrolled plain loads since, same gap); the printf in every kernel is the
suspect. Read within-launch figures and early-triggered overlap, not such gaps.

Usage:
  plan_timeline.py instrument SRC DST   the instrumented copy (each kernel body runs as a lambda
                                        between the stamps; a 4-byte __shared__ counter per CTA)
  plan_timeline.py summarize SRC RUNNER_OUT [--json OUT]
                                        per launch, its stamps after its plan run's first CTA start
                                        (median, min, max over the later half of the runs)
"""
import argparse, json, re, statistics, sys

PLAN = re.compile(r"/\*\s*warpsmith:plan\s*(.*?)\*/", re.S)
KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?'
                    r"(\w+)\s*\(")
FIGURES = ["first CTA start", "last CTA start", "first wait return", "first CTA end",
           "last CTA end"]
SLOTS = 256  # >= any GPU's SM count: slot = %smid

PRELUDE = """
// plan_timeline.py: per-launch %globaltimer stamps (scripts/plan_timeline.py).
#define WS_TL_KERNELS {kernels}
#define WS_TL_SLOTS {slots}
// Per kernel and SM: 0 first start (complemented), 1 last start, 2 first wait (complemented),
// 3 first end (complemented), 4 last end; folded per launch into ws_tl_done_figures.
__device__ unsigned long long ws_tl_slots[WS_TL_KERNELS][5][WS_TL_SLOTS];
__device__ unsigned long long ws_tl_done_figures[WS_TL_KERNELS][5];
__device__ unsigned int ws_tl_ctas_done[WS_TL_KERNELS];
__device__ unsigned int ws_tl_runs[WS_TL_KERNELS];
__device__ __forceinline__ unsigned long long ws_tl_now() {{
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}}
__device__ __forceinline__ unsigned ws_tl_slot() {{
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s % WS_TL_SLOTS;
}}
__device__ __forceinline__ bool ws_tl_thread0() {{
  return threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
}}
__shared__ unsigned ws_tl_left;  // the CTA's threads still in its body
__device__ __forceinline__ void ws_tl_begin(int k) {{
  if (ws_tl_thread0()) ws_tl_left = blockDim.x * blockDim.y * blockDim.z;
  __syncthreads();  // every thread is here: nothing of the body has run
  if (!ws_tl_thread0()) return;
  if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 && ws_tl_runs[k] != 0) {{
    const unsigned long long* f = ws_tl_done_figures[k];
    printf("TL %d %u %llu %llu %llu %llu %llu\\n", k, ws_tl_runs[k], f[0], f[1], f[2], f[3], f[4]);
  }}
  const unsigned long long t = ws_tl_now();
  const unsigned s = ws_tl_slot();
  atomicMax(&ws_tl_slots[k][0][s], ~t);
  atomicMax(&ws_tl_slots[k][1][s], t);
}}
__device__ __forceinline__ void ws_tl_wait(int k) {{
  if (ws_tl_thread0()) atomicMax(&ws_tl_slots[k][2][ws_tl_slot()], ~ws_tl_now());
}}
__device__ __forceinline__ void ws_tl_end(int k) {{
  // The CTA's last threads out of the body stamp its end (threads may leave it early): one
  // shared atomic per group of a warp's lanes leaving together.
  const unsigned group = __activemask(), n = __popc(group);
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  if (lane != __ffs(group) - 1 || atomicSub(&ws_tl_left, n) != n) return;
  const unsigned long long t = ws_tl_now();
  const unsigned s = ws_tl_slot();
  atomicMax(&ws_tl_slots[k][3][s], ~t);
  atomicMax(&ws_tl_slots[k][4][s], t);
  __threadfence();
  const unsigned ctas = gridDim.x * gridDim.y * gridDim.z;
  if (atomicAdd(&ws_tl_ctas_done[k], 1u) != ctas - 1) return;
  __threadfence();
  // Every other CTA of the launch is done: plain loads, independent and unrolled, so they are in
  // flight together.
  unsigned long long m[5] = {{0, 0, 0, 0, 0}};  // the complemented ones: max of ~t = min of t
  volatile unsigned long long* slots = &ws_tl_slots[k][0][0];
#pragma unroll
  for (int j = 0; j < 5; ++j) {{
#pragma unroll 16
    for (int i = 0; i < WS_TL_SLOTS; ++i) {{
      const unsigned long long v = slots[j * WS_TL_SLOTS + i];
      m[j] = v > m[j] ? v : m[j];
    }}
  }}
#pragma unroll 16
  for (int i = 0; i < 5 * WS_TL_SLOTS; ++i) slots[i] = 0;
  unsigned long long* f = ws_tl_done_figures[k];
  f[0] = ~m[0], f[1] = m[1], f[2] = m[2] ? ~m[2] : 0, f[3] = ~m[3], f[4] = m[4];
  ws_tl_ctas_done[k] = 0;
  __threadfence();
  ws_tl_runs[k] += 1;
}}
"""


def plan_kernels(text):
    """The plan's kernels, in the order of its launch list."""
    m = PLAN.search(text)
    if not m:
        raise ValueError("no warpsmith:plan comment")
    names = []
    for launch in json.loads(m.group(1))["launch"]:
        if launch["kernel"] not in names:
            names.append(launch["kernel"])
    return names


def code_only(line):
    """The line without its // comment and string literals (for brace counting)."""
    line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
    return line.split("//", 1)[0]


def body_span(text, start):
    """(open, close) offsets of the braces of the body whose '{' follows offset start."""
    depth, i, open_at = 0, start, None
    for line in text[start:].splitlines(keepends=True):
        code = code_only(line)
        for j, ch in enumerate(code):
            if ch == "{":
                depth += 1
                if open_at is None:
                    open_at = i + j
            elif ch == "}":
                depth -= 1
                if depth == 0 and open_at is not None:
                    return open_at, i + j
        i += len(line)
    raise ValueError("unbalanced braces")


def instrument(text):
    """The instrumented source; raises ValueError for a kernel it cannot stamp."""
    names = plan_kernels(text)
    out, pos, seen = [], 0, set()
    for m in KERNEL.finditer(text):
        name = m.group(1)
        if name not in names:
            continue
        k = names.index(name)
        open_at, close_at = body_span(text, m.end())
        body = text[open_at + 1:close_at]
        body = body.replace("ws::griddep_wait();", f"ws::griddep_wait(); ws_tl_wait({k});")
        # The body runs as a lambda, so a return in it leaves the lambda and still ends the CTA.
        out.append(text[pos:open_at + 1])
        out.append(f"\n  ws_tl_begin({k});\n  [&]() {{{body}  }}();\n  ws_tl_end({k});\n")
        pos = close_at
        seen.add(name)
    out.append(text[pos:])
    missing = [n for n in names if n not in seen]
    if missing:
        raise ValueError(f"plan kernels not found: {', '.join(missing)}")
    src = "".join(out)
    # The prelude goes after the last #include, before the first kernel.
    includes = list(re.finditer(r"^#include .*\n", src, re.M))
    at = includes[-1].end() if includes else PLAN.search(src).end()
    return src[:at] + PRELUDE.format(kernels=len(names), slots=SLOTS) + src[at:]


def parse(lines):
    """Per kernel index, its printed launches: (run, [five figures])."""
    by = {}
    for line in lines:
        w = line.split()
        if len(w) != 8 or w[0] != "TL":
            continue
        try:
            k, run, figs = int(w[1]), int(w[2]), [int(x) for x in w[3:]]
        except ValueError:
            continue
        if figs[0] and figs[4] >= figs[0]:
            by.setdefault(k, []).append((run, figs))
    return by


def summarize(names, by):
    """Launches grouped into plan runs by time: each run of the earliest kernel in the later half
    opens a window to the next; every launch starting in it belongs to it. Per kernel: its
    figures after the run's first CTA start, median / min / max over the runs it appears in."""
    if not by:
        return {"runs": 0, "kernels": {}}
    first = min(by)  # the plan's earliest kernel that ran
    starts = sorted(f[0] for _, f in by[first])
    starts = starts[len(starts) // 2:]
    result = {"runs": len(starts), "kernels": {}}
    for k in sorted(by):
        rel = {n: [] for n in FIGURES}
        for _, f in by[k]:
            # The run this launch belongs to: the latest run start at or before it.
            i = max((j for j, s in enumerate(starts) if s <= f[0]), default=None)
            if i is None:  # before the later half
                continue
            base = starts[i]
            for n, v in zip(FIGURES, f):
                if v:
                    rel[n].append((v - base) / 1000.0)
        result["kernels"][names[k] if k < len(names) else str(k)] = {
            n: {"median_us": round(statistics.median(v), 3), "min_us": round(min(v), 3),
                "max_us": round(max(v), 3), "runs": len(v)}
            for n, v in rel.items() if v}
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("instrument")
    i.add_argument("src")
    i.add_argument("dst")
    s = sub.add_parser("summarize")
    s.add_argument("src", help="the kernel file (its plan names the launches)")
    s.add_argument("runner_out")
    s.add_argument("--json")
    a = ap.parse_args()
    try:
        text = open(a.src).read()
        if a.cmd == "instrument":
            open(a.dst, "w").write(instrument(text))
            return
        names = plan_kernels(text)
    except ValueError as e:
        sys.exit(f"plan_timeline: {a.src}: {e}")
    result = summarize(names, parse(open(a.runner_out, errors="replace")))
    if not result["kernels"]:
        sys.exit(f"plan_timeline: no launch printed in {a.runner_out}")
    for name, figs in result["kernels"].items():
        print(name)
        for n, v in figs.items():
            print(f"  {n:18s} +{v['median_us']:9.2f} us  [{v['min_us']:.2f} .. {v['max_us']:.2f}]")
    if a.json:
        json.dump(result, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
