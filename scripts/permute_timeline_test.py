#!/usr/bin/env python3
"""Tests of scripts/permute_timeline.py: every anchor is found once in the kernel, the copy
differs from it only by the stamps (the plan and every other line kept), a kernel whose anchors
moved is refused, and the summary reads stamps relative to the routing's start over the later
half of the complete runs, skipping incomplete ones. With WARPSMITH=path, the copy also compiles
for sm_90a and sm_100a. Exit 1 on a failure."""
import os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import permute_timeline as tl  # noqa: E402

KERNEL = os.path.join(HERE, "..", "kernels", "moe_permute_quantize", "kernel.cu")


def main():
    failures = []
    text = open(KERNEL).read()
    out = tl.instrument(text)
    if out.count("ws_now()") < 7 or "printf(\"TL " not in out:
        failures.append("the copy lacks its stamps or its print")
    # Undoing each edit gives the kernel back: nothing else was touched.
    undone = out
    for anchor, replacement in reversed(tl.EDITS):
        undone = undone.replace(replacement, anchor, 1)
    if undone != text:
        failures.append("the copy changed the kernel beyond the stamps")
    try:
        tl.instrument(text.replace("ws::griddep_wait();", "ws::griddep_wait(); "))
        failures.append("a kernel whose anchors moved was instrumented")
    except ValueError:
        pass

    # Runs: start, route end, CTA 0 start / pre-wait / wait, first wait, last end, last start.
    def run(base, route_end, last_end):
        return (f"TL {base} {base + route_end} {base + 1000} {base + 5000} {base + 9000} "
                f"{base + 8000} {base + last_end} {base + 50000}")
    lines = ["TL 0 0 0 0 0 0 0 0",  # the first print: nothing stamped yet
             run(10**9, 99000, 999000), run(15 * 10**8, 99000, 999000),  # not summarized
             "TL 5 6 0 0 0 18446744073709551615 9 0",  # incomplete: no wait returned
             run(2 * 10**9, 10000, 90000), run(3 * 10**9, 12000, 92000),
             run(4 * 10**9, 14000, 94000), "garbage line"]
    runs = tl.parse(lines)
    if len(runs) != 5:
        failures.append(f"parse kept {len(runs)} runs, want 5")
    s = tl.summarize(runs)
    route = s["stamps"]["route end (last CTA)"]
    if (route["median_us"], route["min_us"], route["max_us"]) != (12.0, 10.0, 14.0):
        failures.append(f"route end summary {route}")
    if s["stamps"]["last early CTA end"]["median_us"] != 92.0:
        failures.append(f"last end summary {s['stamps']['last early CTA end']}")
    if s["stamps"]["early CTA 0 pre-wait done"]["median_us"] != 5.0:
        failures.append("pre-wait stamp not read from its slot")

    ws = os.environ.get("WARPSMITH")
    if ws:
        with tempfile.TemporaryDirectory() as d:
            dst = os.path.join(d, "kernel.cu")
            open(dst, "w").write(out)
            for arch in ("sm_90a", "sm_100a"):
                r = subprocess.run([ws, "--workspace", os.path.join(d, "ws"), "eval",
                                    "moe_permute_quantize", dst, "--compile-only", "--arch", arch],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    failures.append(f"the copy does not compile for {arch}: {r.stdout[-400:]}")
    for f in failures:
        print("permute_timeline_test: FAIL:", f)
    if failures:
        sys.exit(1)
    print("permute_timeline_test: ok")


if __name__ == "__main__":
    main()
