#!/usr/bin/env python3
"""Our rowwise quantizer's cubins and the Triton peer in one process, for Nsight Compute: what the
DRAM really moved (bytes read and written), the duration, and the L2 traffic of each, at one
shape. Run under ncu by `scripts/gpu_session.sh ncu` (it builds the cubins and the manifest).

Usage: rowwise_ncu.py MANIFEST.json
  MANIFEST: {"M": .., "K": .., "rounding": "floor"|"rceil",
             "kernels": [{"name": .., "cubin": .., "knobs": {..}}]}
Each of our kernels and the peer runs LAUNCHES times on fresh outputs; ncu (--cache-control all)
flushes the caches before each profiled launch. The kernels are not checked here: the evaluator
checks the same cubins bit for bit.
"""
import json, os, sys

import cupy
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
from mxfp8_quantize_rowwise import mx_quant_rows  # noqa: E402  (the peer, as bench/peers times it)

LAUNCHES = 3


def grid_of(knobs, m, k, num_sms):
    """The plan's grid: min(ceil_div(M*K, 8*CHUNKS*THREADS), num_sms*CTAS_PER_SM)."""
    per_cta = 8 * knobs["CHUNKS"] * knobs["THREADS"]
    return min((m * k + per_cta - 1) // per_cta, num_sms * knobs["CTAS_PER_SM"])


def main():
    man = json.load(open(sys.argv[1]))
    m, k, rceil = man["M"], man["K"], man["rounding"] == "rceil"
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    q = torch.empty(m, k, device="cuda", dtype=torch.uint8)
    s = torch.empty(m * k // 32, device="cuda", dtype=torch.uint8)
    for entry in man["kernels"]:
        fn = cupy.RawModule(path=entry["cubin"]).get_function("sm90_bf16_mxfp8_quantize_rowwise")
        grid = grid_of(entry["knobs"], m, k, num_sms)
        args = (np.uint64(x.data_ptr()), np.uint64(q.data_ptr()), np.uint64(s.data_ptr()),
                np.int32(m), np.int32(k))
        for _ in range(LAUNCHES):
            q.fill_(0xA5)
            fn((grid,), (entry["knobs"]["THREADS"],), args)
        torch.cuda.synchronize()
        print(f"ours {entry['name']}: grid {grid} x {entry['knobs']['THREADS']}", flush=True)
    nb = m * k // 32
    xf = x.view(torch.bfloat16)
    qf = q.view(torch.float8_e4m3fn)
    for _ in range(LAUNCHES):
        q.fill_(0xA5)
        mx_quant_rows[((nb + 63) // 64,)](xf, qf, s, nb, RCEIL=rceil, BLOCKS=64)
    torch.cuda.synchronize()
    print("peer: Triton mx_quant_rows BLOCKS=64", flush=True)


if __name__ == "__main__":
    main()
