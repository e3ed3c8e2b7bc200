#!/usr/bin/env python3
"""Tests of scripts/plan_timeline.py: the copy stamps every kernel of the plan (and only those),
hooks each ws::griddep_wait() in their bodies, and differs from the kernel by nothing else; a
plan naming a kernel the file lacks is refused; the summary groups launches into plan runs by
time and reads each launch's figures after its run's start, over the later half of the runs.
With WARPSMITH=path, the copies of a few plans also compile for sm_90a and sm_100a. Exit 1 on a
failure."""
import os, re, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import plan_timeline as tl  # noqa: E402

KERNELS = os.path.join(HERE, "..", "kernels")
COMPILED = ["moe_permute_quantize", "mxfp8_quantize_dual", "mxfp8_quantize_rowwise"]


def undo(out, names):
    """The copy with the prelude and every inserted piece taken out."""
    out = out.replace(tl.PRELUDE.format(kernels=len(names), slots=tl.SLOTS), "", 1)
    out = re.sub(r" ws_tl_wait\(\d+\);", "", out)
    out = re.sub(r"\n  ws_tl_begin\(\d+\);\n  \[&\]\(\) \{", "", out)
    return re.sub(r"  \}\(\);\n  ws_tl_end\(\d+\);\n", "", out)


def main():
    failures = []
    for p in COMPILED:
        text = open(os.path.join(KERNELS, p, "kernel.cu")).read()
        names = tl.plan_kernels(text)
        out = tl.instrument(text)
        for k in range(len(names)):
            if f"ws_tl_begin({k});" not in out or f"ws_tl_end({k});" not in out:
                failures.append(f"{p}: kernel {names[k]} not stamped")
        if out.count("ws_tl_begin(") - 1 != len(names):  # one more in the prelude
            failures.append(f"{p}: stamped {out.count('ws_tl_begin(') - 1} kernels, want "
                            f"{len(names)}")
        hooked = out.count("ws_tl_wait(") - tl.PRELUDE.count("ws_tl_wait(")
        if text.count("ws::griddep_wait();") and hooked == 0:
            failures.append(f"{p}: no wait hooked")
        if undo(out, names) != text:
            failures.append(f"{p}: the copy changed the kernel beyond the stamps")
    text = open(os.path.join(KERNELS, "mxfp8_quantize_dual", "kernel.cu")).read()
    try:
        tl.instrument(text.replace("sm90_mxfp8_quantize_dual_scales(", "renamed_scales("))
        failures.append("a plan kernel missing from the file was not refused")
    except ValueError:
        pass

    # Two kernels, four plan runs 1 ms apart; kernel 1 starts 2 us in, waits, ends at 50 us.
    lines = ["TL 0 1 0 0 0 0 0", "junk"]
    for r in range(4):
        b = (r + 1) * 10**6
        lines.append(f"TL 0 {r + 1} {b} {b + 500} 0 {b + 9000} {b + 10000 + 1000 * r}")
        lines.append(f"TL 1 {r + 1} {b + 2000} {b + 30000} {b + 11000} {b + 12000} {b + 50000}")
    s = tl.summarize(["first", "second"], tl.parse(lines))
    if s["runs"] != 2:
        failures.append(f"runs {s['runs']}, want the later 2 of 4")
    k0, k1 = s["kernels"].get("first", {}), s["kernels"].get("second", {})
    if k0.get("last CTA end", {}).get("median_us") != 12.5:  # 12 and 13 us
        failures.append(f"first's end {k0.get('last CTA end')}")
    if "first wait return" in k0:
        failures.append("a launch without a wait got a wait figure")
    if k1.get("first wait return", {}).get("median_us") != 11.0 or \
            k1.get("first CTA start", {}).get("median_us") != 2.0 or \
            k1.get("last CTA end", {}).get("runs") != 2:
        failures.append(f"second's figures {k1}")

    ws = os.environ.get("WARPSMITH")
    if ws:
        with tempfile.TemporaryDirectory() as d:
            for p in COMPILED:
                dst = os.path.join(d, p + ".cu")
                open(dst, "w").write(tl.instrument(open(os.path.join(KERNELS, p,
                                                                     "kernel.cu")).read()))
                for arch in ("sm_90a", "sm_100a"):
                    r = subprocess.run([ws, "--workspace", os.path.join(d, "ws"), "eval", p, dst,
                                        "--compile-only", "--arch", arch],
                                       capture_output=True, text=True)
                    if r.returncode != 0:
                        failures.append(f"{p}: the copy does not compile for {arch}: "
                                        f"{r.stdout[-400:]}")
    for f in failures:
        print("plan_timeline_test: FAIL:", f)
    if failures:
        sys.exit(1)
    print("plan_timeline_test: ok")


if __name__ == "__main__":
    main()
