#!/usr/bin/env python3
"""A kernel's copy for locating a hang: WS_WAIT_TRACE defined before its first #include (every
ws::mbar_wait then reports and traps when stuck; kernels/include/ws/ptx_sm90.cuh), and the knob
values named on the command line added to its plan's declared values, so a value the plan keeps
from the tuner (bf16_grouped_gemm's "PP": [0]) can be evaluated.
Usage: trace_kernel.py SRC DST [KNOB=VALUE ...]   (the `trace` stage of scripts/gpu_session.sh)"""
import json
import re
import sys

PLAN = re.compile(r"/\*\s*warpsmith:plan\s*(.*?)\*/", re.S)


def traced(src, knobs):
    m = PLAN.search(src)
    if not m:
        raise ValueError("no warpsmith:plan block")
    plan = json.loads(m.group(1))
    declared = plan.get("knobs", {})
    for kv in knobs:
        name, sep, value = kv.partition("=")
        if not sep or not re.fullmatch(r"-?\d+", value):
            raise ValueError(f"{kv!r}: expected KNOB=INTEGER")
        if name not in declared:
            raise ValueError(f"knob {name} is not declared by the plan")
        if int(value) not in declared[name]:
            declared[name].append(int(value))
    src = src[: m.start(1)] + json.dumps(plan, indent=1) + "\n" + src[m.end(1):]
    include = re.search(r"^#include", src, re.M)
    if not include:
        raise ValueError("no #include to put WS_WAIT_TRACE before")
    return src[: include.start()] + "#define WS_WAIT_TRACE 1\n" + src[include.start():]


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        out = traced(open(sys.argv[1]).read(), sys.argv[3:])
    except (OSError, ValueError) as e:
        print(f"trace_kernel: {e}", file=sys.stderr)
        return 1
    open(sys.argv[2], "w").write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
