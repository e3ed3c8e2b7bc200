#!/usr/bin/env python3
"""moe_permute_quantize's routing and early quantize inside the timed graph (K <= 2).

nsys is not on the GPU machines and ncu runs launches one at a time, so neither shows how the
routing launch and the early quantize overlap in the stream. This writes an instrumented copy of
the kernel: the routing's CTA 0 stamps %globaltimer at its start and every routing CTA its end;
the early kernel's CTA 0 stamps its start, the end of its pre-wait work and the wait's return,
and every early CTA its start, its wait's return and its end (atomicMax / atomicMin into a
__device__ array). The next launch of the routing prints the previous plan run's stamps before
it stamps its own start, so the printf falls outside the window it measures.

Usage:
  permute_timeline.py instrument SRC DST   the instrumented copy (exit 1 if SRC's anchors moved)
  permute_timeline.py summarize RUNNER_OUT [--json OUT]
                                           each stamp's time after the routing's start: median
                                           and range over the later half of the printed runs
                                           (the bench shape's timed runs come last)
"""
import argparse, json, statistics, sys

# Stamp slots; the routing's CTA 0 resets them before its own start stamp.
STAMPS = [  # (slot, name, how the slot is written)
    (0, "route start", "set"),
    (1, "route end (last CTA)", "max"),
    (2, "early CTA 0 start", "set"),
    (3, "early CTA 0 pre-wait done", "set"),
    (4, "early CTA 0 wait returns", "set"),
    (5, "first early wait return", "min"),
    (6, "last early CTA end", "max"),
    (7, "last early CTA start", "max"),
]

PRELUDE = """
// permute_timeline.py: %globaltimer stamps of one plan run (slots: scripts/permute_timeline.py).
__device__ unsigned long long ws_timeline[8];
__device__ __forceinline__ unsigned long long ws_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
"""

# (anchor in the kernel, its replacement): each anchor must occur exactly once.
EDITS = [
    ('#include "ws/ptx_sm90.cuh"\n', '#include "ws/ptx_sm90.cuh"\n' + PRELUDE),
    ("""                      int A, int MP) {
  extern __shared__ int smem[];
  ws::griddep_launch_dependents();
  long long w0, w1;
  route_scan(""",
     """                      int A, int MP) {
  extern __shared__ int smem[];
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    unsigned long long* s = ws_timeline;
    printf("TL %llu %llu %llu %llu %llu %llu %llu %llu\\n", s[0], s[1], s[2], s[3], s[4], s[5],
           s[6], s[7]);
    s[1] = 0, s[5] = ~0ull, s[6] = 0, s[7] = 0;
    __threadfence();
    s[0] = ws_now();
  }
  ws::cluster_sync();  // no CTA of the plan runs on before the reset
  ws::griddep_launch_dependents();
  long long w0, w1;
  route_scan("""),
    ("""  rank_slots<true>(idx, w0, w1, smem + 32 * E + 2 * E, smem + warp * E, slot_row, row_slot,
                   threadIdx.x & 31);
}""",
     """  rank_slots<true>(idx, w0, w1, smem + 32 * E + 2 * E, smem + warp * E, slot_row, row_slot,
                   threadIdx.x & 31);
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(&ws_timeline[1], ws_now());
}"""),
    ("""  const long long t0 = static_cast<long long>(blockIdx.x) * EARLY_TOKENS * tpw + warp;
""",
     """  const long long t0 = static_cast<long long>(blockIdx.x) * EARLY_TOKENS * tpw + warp;
  if (threadIdx.x == 0) {
    const unsigned long long t = ws_now();
    if (blockIdx.x == 0) ws_timeline[2] = t;
    atomicMax(&ws_timeline[7], t);
  }
"""),
    ("""    for (int i = 0; i < tpw; ++i) quantize_token(i);
    ws::griddep_wait();
""",
     """    for (int i = 0; i < tpw; ++i) quantize_token(i);
    __syncthreads();
    if (threadIdx.x == 0 && blockIdx.x == 0) ws_timeline[3] = ws_now();
    ws::griddep_wait();
    if (threadIdx.x == 0) {
      const unsigned long long t = ws_now();
      if (blockIdx.x == 0) ws_timeline[4] = t;
      atomicMin(&ws_timeline[5], t);
    }
"""),
    ("""    zero_rows(row_slot, q, scales, H, MP, (zero_items - 1 - z) * 32, lane);
  }
}""",
     """    zero_rows(row_slot, q, scales, H, MP, (zero_items - 1 - z) * 32, lane);
  }
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(&ws_timeline[6], ws_now());
}"""),
]


def instrument(text):
    """The instrumented source; raises ValueError naming an anchor that is missing or repeated."""
    for anchor, replacement in EDITS:
        n = text.count(anchor)
        if n != 1:
            raise ValueError(f"anchor found {n} times (want 1): {anchor.strip().splitlines()[0]!r}")
        text = text.replace(anchor, replacement)
    return text


def parse(lines):
    """The complete runs printed: lists of the 8 stamps, in print order."""
    runs = []
    for line in lines:
        words = line.split()
        if len(words) != 9 or words[0] != "TL":
            continue
        try:
            v = [int(w) for w in words[1:]]
        except ValueError:
            continue
        # A run whose early kernel never reached its wait (or the first print, all zeros) is
        # incomplete: the routing's start, its end and the last CTA's end must all be stamped.
        if v[0] and v[1] >= v[0] and v[6] >= v[0] and v[5] != 2**64 - 1:
            runs.append(v)
    return runs


def summarize(runs):
    """Per stamp after the routing's start (us): median, min, max over the later half."""
    tail = runs[len(runs) // 2:]
    out = {"runs": len(runs), "summarized": len(tail), "stamps": {}}
    for slot, name, _ in STAMPS[1:]:
        d = [(r[slot] - r[0]) / 1000.0 for r in tail]
        out["stamps"][name] = {"median_us": round(statistics.median(d), 3),
                               "min_us": round(min(d), 3), "max_us": round(max(d), 3)}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("instrument")
    i.add_argument("src")
    i.add_argument("dst")
    s = sub.add_parser("summarize")
    s.add_argument("runner_out")
    s.add_argument("--json")
    a = ap.parse_args()
    if a.cmd == "instrument":
        try:
            out = instrument(open(a.src).read())
        except ValueError as e:
            sys.exit(f"permute_timeline: {a.src}: {e}")
        open(a.dst, "w").write(out)
        return
    runs = parse(open(a.runner_out, errors="replace"))
    if not runs:
        sys.exit(f"permute_timeline: no complete run printed in {a.runner_out}")
    result = summarize(runs)
    for name, v in result["stamps"].items():
        print(f"{name:28s} +{v['median_us']:8.2f} us  [{v['min_us']:.2f} .. {v['max_us']:.2f}]")
    if a.json:
        json.dump(result, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
