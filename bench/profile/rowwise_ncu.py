#!/usr/bin/env python3
"""The Triton peer of mxfp8_quantize_rowwise (bench/peers, as it is timed there) at the bench
shapes, a few launches each, for Nsight Compute to profile beside our kernel's runner
(`scripts/gpu_session.sh ncu` runs both): what the DRAM really moved and how long it took.

Usage: rowwise_ncu.py ROUNDING [MxK ...]   (default: the peer script's shapes)
The outputs are not checked here; bench/peers/mxfp8_quantize_rowwise.py and the evaluator do that.
"""
import os, sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
from mxfp8_quantize_rowwise import SHAPES, mx_quant_rows  # noqa: E402

LAUNCHES = 2  # ncu (--cache-control all) flushes the caches before each profiled launch
BLOCKS = 64   # the peer's best configuration at every bench shape on the H200


def main():
    rceil = sys.argv[1] == "rceil"
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[2:]] or SHAPES
    for m, k in shapes:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        q = torch.empty(m, k, device="cuda", dtype=torch.float8_e4m3fn)
        s = torch.empty(m * k // 32, device="cuda", dtype=torch.uint8)
        nb = m * k // 32
        for _ in range(LAUNCHES):
            mx_quant_rows[((nb + BLOCKS - 1) // BLOCKS,)](x, q, s, nb, RCEIL=rceil, BLOCKS=BLOCKS)
        torch.cuda.synchronize()
        print(f"peer {m}x{k} {sys.argv[1]}: Triton mx_quant_rows BLOCKS={BLOCKS}", flush=True)
        del x, q, s


if __name__ == "__main__":
    main()
