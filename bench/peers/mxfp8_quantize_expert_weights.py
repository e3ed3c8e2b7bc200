# Peers for mxfp8_quantize_expert_weights on the GPU at hand: the dual Triton tile kernel with an expert grid axis, torch eager (rowwise of w and of w transposed per expert) and torch.compile of it. Each is timed two ways in this process:
#   "protocol": warpsmith's own method (CUDA events around the launch only; before every timed
#               launch the outputs are overwritten and the L2 is flushed by reading 4x its size;
#               input sets rotated; median);
#   "do_bench": triton.testing.do_bench, median (Triton only).
# The peers are timed, not checked bit for bit: they follow the rules only approximately.
# Layout of OUT.json as bench/peers/mxfp8_quantize_rowwise.py: shapes -> mode -> figures (TB/s of
# the spec's minimum bytes), plus eager_protocol_TBps. PEERS_NO_COMPILE=1 skips torch.compile.
# Usage: python3 mxfp8_quantize_expert_weights.py OUT.json

import json, sys

import torch
import triton

from common import best_triton, header, report, torch_peers
from mx_tile import mx_quant_tile, mx_rows_torch, triton_configs
from spec_shapes import bench_shapes


SHAPES = bench_shapes("mxfp8_quantize_expert_weights", "E", "N", "K")


def eager(w, rceil):
    e, n, k = w.shape
    q_k, s_k = mx_rows_torch(w.reshape(e * n, k), rceil)
    q_n, s_n = mx_rows_torch(w.transpose(1, 2).contiguous().reshape(e * k, n), rceil)
    return q_k, s_k, q_n, s_n


def main():
    res = header()
    for e, n, k in SHAPES:
        # 2.1e9 elements at the largest shape: one input set of 4.2 GB (rotation would need two).
        nsets = 1 if e * n * k > 2**30 else 2
        ws = [torch.randn(e, n, k, device="cuda", dtype=torch.bfloat16) * (2.0 ** (5 * i))
              for i in range(nsets)]
        q_k = torch.empty(e, n, k, device="cuda", dtype=torch.float8_e4m3fn)
        s_k = torch.empty(e, n, k // 32, device="cuda", dtype=torch.uint8)
        q_n = torch.empty(e, k, n, device="cuda", dtype=torch.float8_e4m3fn)
        s_n = torch.empty(e, k, n // 32, device="cuda", dtype=torch.uint8)
        nbytes = e * n * k * 2 + 2 * (e * n * k + e * n * k // 32)
        shape_res = {}
        for mode in ("rceil", "floor"):
            rceil = mode == "rceil"
            try:
                def launch(i, bm, bk, nw):
                    grid = (triton.cdiv(n, bm), triton.cdiv(k, bk), e)
                    mx_quant_tile[grid](ws[i % nsets], q_k, s_k, q_n, s_n, n, k, RCEIL=rceil,
                                        ROW=True, COL=True, BM=bm, BK=bk, num_warps=nw)
                r = best_triton(triton_configs(launch, [q_k, s_k, q_n, s_n], n, k), nbytes)
                # The eager composition needs ~3 extra copies of w: skip it where it cannot fit.
                if e * n * k <= 2**30:
                    r.update(torch_peers(lambda x, rc=rceil: eager(x, rc), [(x,) for x in ws],
                                         nbytes))
                else:
                    r["eager_error"] = "skipped: w too large for the eager composition's temporaries"
            except Exception as ex:  # keep the other modes' and shapes' figures
                r = {"error": repr(ex)[:500]}
            report(f"{e}x{n}x{k}", mode, r)
            shape_res[mode] = r
            torch.cuda.empty_cache()
        res["shapes"][f"{e}x{n}x{k}"] = shape_res
        del ws, q_k, s_k, q_n, s_n
        torch.cuda.empty_cache()
    with open(sys.argv[1], "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
