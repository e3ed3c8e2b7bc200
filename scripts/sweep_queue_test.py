#!/usr/bin/env python3
"""Tests of scripts/sweep_queue.py: a queue naming an unknown problem, parameter value, knob or
knob value, a bare default, or a name in its bench filter that is no symbol, is refused with the
line; a good one lists as gpu_session.sh reads it. Exit 1 on a failure."""
import os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, text):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    try:
        return subprocess.run([sys.executable, os.path.join(HERE, "sweep_queue.py"), cmd, f.name],
                              capture_output=True, text=True)
    finally:
        os.unlink(f.name)


def main():
    failures = []
    good = ("# a comment\n\nmxfp8_quantize_rowwise | rounding=rceil rounding=floor | "
            "LANE_PAIRS=1; THREADS=256  CHUNKS=4 |\nmxfp8_grouped_gemm_fwd | - | SCALE_PIPE=0 | hidden\n"
            "bf16_gemm | - | EPI=0 | where M <= 128\n"
            "bf16_gemm | - | EPI=0 | hidden where max(M, 1) <= 128 && K > 16\n")
    r = run("check", good)
    if r.returncode != 0:
        failures.append(f"a good queue is refused: {r.stdout}")
    r = run("list", good)
    want = ["mxfp8_quantize_rowwise\trounding=rceil rounding=floor\tLANE_PAIRS=1;THREADS=256 CHUNKS=4\t0\t-",
            "mxfp8_grouped_gemm_fwd\t-\tSCALE_PIPE=0\t1\t-",
            "bf16_gemm\t-\tEPI=0\t0\tM <= 128",
            "bf16_gemm\t-\tEPI=0\t1\tmax(M, 1) <= 128 && K > 16"]
    if r.stdout.splitlines() != want:
        failures.append(f"list: {r.stdout.splitlines()}")
    bad = {"no_such_problem | - | A=1 |\n": "no problem",
           "mxfp8_quantize_rowwise | rounding=up | LANE_PAIRS=1 |\n": "rounding=up",
           "mxfp8_quantize_rowwise | - | NOPE=1 |\n": "no knob NOPE",
           "mxfp8_quantize_rowwise | - | LANE_PAIRS=7 |\n": "LANE_PAIRS=7",
           "mxfp8_quantize_rowwise | - | CHUNKS=2 |\n": "default",
           "mxfp8_quantize_rowwise | - | LANE_PAIRS=1 | fast\n": "unknown option",
           "mxfp8_quantize_rowwise | - | LANE_PAIRS=1 | where\n": "unknown option",
           "bf16_gemm | - | EPI=0 | where Q <= 128\n": "'Q' in the bench filter",
           "mxfp8_quantize_rowwise | LANE_PAIRS=1\n": "PROBLEM | SETTINGS"}
    for text, says in bad.items():
        r = run("check", text)
        if r.returncode == 0 or says not in r.stdout or ":1" not in r.stdout:
            failures.append(f"{text.strip()!r}: rc {r.returncode}, {r.stdout.strip()!r}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
