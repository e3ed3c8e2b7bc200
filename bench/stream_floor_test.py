#!/usr/bin/env python3
"""Tests of bench/stream_floor.py's byte accounting (no GPU): the bytes each memory-bound bench
shape must read and write, against figures worked out by hand from the specs; the shape
language's integer division. Usage: stream_floor_test.py (exit 1 on a failure)."""
import os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import stream_floor  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def main():
    rows = {p["label"]: p for p in stream_floor.patterns([])}
    m, k = 16384, 2880
    r = rows.get(f"mxfp8_quantize_rowwise:K={k},M={m}")
    check(r is not None, "the rowwise quantizer's 16384x2880 bench shape is listed")
    if r:
        check(r["read_bytes"] == 2 * m * k, f"rowwise reads x: got {r['read_bytes']}")
        check(r["write_bytes"] == m * k + m * k // 32, f"writes q and scales: {r['write_bytes']}")
    t, h, kk = 16384, 7168, 8
    c = rows.get(f"moe_unpermute_combine:A=128,E=256,H={h},K={kk},T={t}:shared=none")
    add = rows.get(f"moe_unpermute_combine:A=128,E=256,H={h},K={kk},T={t}:shared=add")
    check(add is not None and c is not None and add["params"] == {"shared": "add"},
          "the combine's bytes depend on `shared`: a floor per setting")
    if add and c:
        check(add["read_bytes"] - c["read_bytes"] == 2 * t * h,
              "shared=add also reads the shared expert's output")
    check(c is not None, "the combine's E256 shape is listed")
    if c:
        # It writes y [T,H] bf16; it reads the T*K permuted rows that hold tokens (not the
        # padding the permuted tensor's shape holds), their indices and weights (the spec's bytes).
        check(c["write_bytes"] == 2 * t * h, f"combine writes y: got {c['write_bytes']}")
        check(c["read_bytes"] < 2 * (t * kk + 256 * 127) * h,
              f"combine's reads exclude the padding rows: got {c['read_bytes']}")
        check(c["read_bytes"] >= 2 * t * kk * h, "and include every routed row")
    check(not any(p["problem"] == "bf16_gemm" for p in rows.values()), "GEMMs have no floor here")
    check(rows.get(f"mxfp8_quantize_rowwise:K={k},M={m}", {}).get("params") == {},
          "one floor for every setting where the bytes do not depend on it")
    check(stream_floor.shape_value("ceil_div(M + 96 * G, 128) * (M / 32) * 32",
                                   {"M": 100, "G": 1}, {}) == 2 * 96,
          "integer division and ceil_div as problems/expr.cc")
    if failures:
        print("stream_floor_test: FAILED\n  " + "\n  ".join(failures))
        return 1
    print(f"stream_floor_test: ok ({len(rows)} shapes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
