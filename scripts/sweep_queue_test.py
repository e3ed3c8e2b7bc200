#!/usr/bin/env python3
"""Tests of scripts/sweep_queue.py: a queue naming an unknown problem, parameter value, knob or
knob value, a bare default, or a name in its bench filter that is no symbol, is refused with the
line; a good one lists as gpu_session.sh reads it; `compile` builds every variant in every
setting for both architectures and reports each failed build. Exit 1 on a failure."""
import os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, text, *extra):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    try:
        return subprocess.run([sys.executable, os.path.join(HERE, "sweep_queue.py"), cmd, *extra,
                               f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)


# A stand-in for build/warpsmith: logs its arguments, fails every sm_100a compile of LANE_PAIRS=1.
FAKE_WARPSMITH = """#!/bin/sh
echo "$*" >> "$FAKE_LOG"
case "$*" in *LANE_PAIRS=1*sm_100a*|*sm_100a*LANE_PAIRS=1*) echo "error: no such register"; exit 1;; esac
echo "compiled"
"""


def check_compile(failures):
    with tempfile.TemporaryDirectory() as d:
        fake, log = os.path.join(d, "warpsmith"), os.path.join(d, "log")
        with open(fake, "w") as f:
            f.write(FAKE_WARPSMITH)
        os.chmod(fake, 0o755)
        os.environ["FAKE_LOG"] = log
        r = run("compile", "mxfp8_quantize_rowwise | rounding=rceil rounding=floor | "
                "LANE_PAIRS=1; THREADS=256 CHUNKS=2 |\n", fake)
        calls = open(log).read().splitlines() if os.path.exists(log) else []
        # 2 settings x 2 variants x 2 architectures, each with its --set and --knob arguments.
        if len(calls) != 8 or not all("--compile-only" in c for c in calls):
            failures.append(f"compile ran {len(calls)} builds: {calls}")
        if not any("--set rounding=floor" in c and "--knob THREADS=256 --knob CHUNKS=2" in c
                   and "--arch sm_90a" in c for c in calls):
            failures.append(f"compile: no build with the setting and both knobs: {calls}")
        if (r.returncode != 1 or r.stdout.count("LANE_PAIRS=1 sm_100a: exit 1") != 2
                or "no such register" not in r.stdout or "THREADS=256" in r.stdout.split("failed")[1]):
            failures.append(f"compile: rc {r.returncode}, {r.stdout!r}")


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
    check_compile(failures)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
