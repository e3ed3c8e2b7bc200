# Peers for mxfp8_quantize_dual on the GPU at hand: a Triton tile kernel quantizing one read tile both ways, torch eager (rowwise + transpose + rowwise) and torch.compile of it. Each is timed two ways in this process:
#   "protocol": warpsmith's own method (CUDA events around the launch only; before every timed
#               launch the outputs are overwritten and the L2 is flushed by reading 4x its size;
#               input sets rotated; median);
#   "do_bench": triton.testing.do_bench, median (Triton only).
# The peers are timed, not checked bit for bit: they follow the rules only approximately.
# Layout of OUT.json as bench/peers/mxfp8_quantize_rowwise.py: shapes -> mode -> figures (TB/s of
# the spec's minimum bytes), plus eager_protocol_TBps. PEERS_NO_COMPILE=1 skips torch.compile.
# Usage: python3 mxfp8_quantize_dual.py OUT.json

import json, sys

import torch
import triton

from common import best_triton, header, report, torch_peers
from mx_tile import mx_quant_tile, mx_rows_torch, triton_configs
from spec_shapes import bench_shapes


SHAPES = bench_shapes("mxfp8_quantize_dual", "M", "K")


def eager(x, rceil):
    q, s = mx_rows_torch(x, rceil)
    q_t, s_t = mx_rows_torch(x.t().contiguous(), rceil)
    return q, s, q_t, s_t


def main():
    res = header()
    for m, k in SHAPES:
        xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) * (2.0 ** i) for i in (0, 5)]
        q = torch.empty(m, k, device="cuda", dtype=torch.float8_e4m3fn)
        s = torch.empty(m, k // 32, device="cuda", dtype=torch.uint8)
        q_t = torch.empty(k, m, device="cuda", dtype=torch.float8_e4m3fn)
        s_t = torch.empty(k, m // 32, device="cuda", dtype=torch.uint8)
        nbytes = m * k * 2 + 2 * (m * k + m * k // 32)
        shape_res = {}
        for mode in ("rceil", "floor"):
            rceil = mode == "rceil"
            try:
                def launch(i, bm, bk, w):
                    grid = (triton.cdiv(m, bm), triton.cdiv(k, bk), 1)
                    mx_quant_tile[grid](xs[i % 2], q, s, q_t, s_t, m, k, RCEIL=rceil,
                                        ROW=True, COL=True, BM=bm, BK=bk, num_warps=w)
                r = best_triton(triton_configs(launch, [q, s, q_t, s_t], m, k), nbytes)
                r.update(torch_peers(lambda x, rc=rceil: eager(x, rc), [(x,) for x in xs], nbytes))
            except Exception as ex:  # keep the other modes' and shapes' figures
                r = {"error": repr(ex)[:500]}
            report(f"{m}x{k}", mode, r)
            shape_res[mode] = r
        res["shapes"][f"{m}x{k}"] = shape_res
        del xs, q, s, q_t, s_t
        torch.cuda.empty_cache()
    with open(sys.argv[1], "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
