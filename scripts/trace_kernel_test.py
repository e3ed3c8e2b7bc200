#!/usr/bin/env python3
"""Tests of scripts/trace_kernel.py: the traced copy defines WS_WAIT_TRACE before its first
#include, declares the knob values asked for (and keeps the plan's others and its first value),
leaves the rest of the source as it was, and refuses an undeclared knob, a value that is not an
integer and a source without a plan. Exit 1 on a failure."""
import json, os, re, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL = os.path.join(HERE, "..", "kernels", "bf16_grouped_gemm", "kernel.cu")
PLAN = re.compile(r"/\*\s*warpsmith:plan\s*(.*?)\*/", re.S)


def run(src_text, args):
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "in.cu"), os.path.join(d, "out.cu")
        open(src, "w").write(src_text)
        r = subprocess.run([sys.executable, os.path.join(HERE, "trace_kernel.py"), src, dst] + args,
                           capture_output=True, text=True)
        return r, open(dst).read() if os.path.exists(dst) else None


def main():
    failures = []
    text = open(KERNEL).read()
    r, out = run(text, ["PP=1", "BN=128"])
    if r.returncode != 0 or out is None:
        failures.append(f"a good call failed: {r.stderr}")
    else:
        plan, before = json.loads(PLAN.search(out).group(1)), json.loads(PLAN.search(text).group(1))
        if plan["knobs"]["PP"] != before["knobs"]["PP"] + [1]:
            failures.append(f"PP not widened: {plan['knobs']['PP']}")
        if plan["knobs"]["BN"] != before["knobs"]["BN"]:  # 128 was declared already
            failures.append(f"BN changed: {plan['knobs']['BN']}")
        if {k: v for k, v in plan.items() if k != "knobs"} != \
                {k: v for k, v in before.items() if k != "knobs"}:
            failures.append("the plan changed beyond its knobs")
        first = out.index("#include")
        if out.rfind("#define WS_WAIT_TRACE 1\n", 0, first) < 0:
            failures.append("WS_WAIT_TRACE is not defined before the first #include")
        if out[PLAN.search(out).end():].replace("#define WS_WAIT_TRACE 1\n", "", 1) != \
                text[PLAN.search(text).end():]:
            failures.append("the source after the plan changed")
    for args, why in [(["NOPE=1"], "not declared"), (["PP=x"], "KNOB=INTEGER")]:
        r, out = run(text, args)
        if r.returncode == 0 or why not in r.stderr or out is not None:
            failures.append(f"{args}: rc {r.returncode}, {r.stderr!r}")
    r, out = run('#include "ws/gemm.cuh"\n', [])
    if r.returncode == 0 or "plan" not in r.stderr:
        failures.append(f"no plan: rc {r.returncode}, {r.stderr!r}")
    for f in failures:
        print("FAIL:", f)
    print(f"trace_kernel_test: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
