# Peers for mxfp8_dequantize on the GPU at hand: a Triton kernel (blocks of 32, fp8 -> fp32 times exp2(S - 127) -> bf16), torch eager and torch.compile of it. Each is timed two ways in this process:
#   "protocol": warpsmith's own method (CUDA events around the launch only; before every timed
#               launch the outputs are overwritten and the L2 is flushed by reading 4x its size;
#               input sets rotated; median);
#   "do_bench": triton.testing.do_bench, median (Triton only).
# The peers are timed, not checked bit for bit: they follow the rules only approximately.
# Layout of OUT.json as bench/peers/mxfp8_quantize_rowwise.py: shapes -> mode -> figures (TB/s of
# the spec's minimum bytes), plus eager_protocol_TBps. PEERS_NO_COMPILE=1 skips torch.compile.
# Usage: python3 mxfp8_dequantize.py OUT.json

import json, sys

import torch
import triton
import triton.language as tl

from common import best_triton, header, report, torch_peers
from spec_shapes import bench_shapes


@triton.jit
def mx_dequant_rows(q_ptr, s_ptr, y_ptr, n_blocks, BLOCKS: tl.constexpr):
    pid = tl.program_id(0)
    blk = pid.to(tl.int64) * BLOCKS + tl.arange(0, BLOCKS)
    offs = blk[:, None] * 32 + tl.arange(0, 32)[None, :]
    mask = blk[:, None] < n_blocks
    q = tl.load(q_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    s = tl.load(s_ptr + blk, mask=blk < n_blocks, other=127).to(tl.float32)
    y = q * tl.exp2(s - 127.0)[:, None]
    tl.store(y_ptr + offs, y.to(tl.bfloat16), mask=mask)


SHAPES = bench_shapes("mxfp8_dequantize", "M", "K")


def eager(q, s):
    m, k = q.shape
    y = q.float().reshape(m, k // 32, 32) * torch.exp2(s.float() - 127)[..., None]
    return y.reshape(m, k).to(torch.bfloat16)


def main():
    res = header()
    for m, k in SHAPES:
        sets = []
        for i in (0, 5):
            x = torch.randn(m, k, device="cuda", dtype=torch.float32) * (2.0 ** i)
            q = x.clamp(-448, 448).to(torch.float8_e4m3fn)
            del x
            s = torch.randint(100, 150, (m, k // 32), device="cuda", dtype=torch.uint8)
            sets.append((q, s))
        y = torch.empty(m, k, device="cuda", dtype=torch.bfloat16)
        nbytes = m * k + m * k // 32 + m * k * 2
        nb = m * k // 32
        try:
            cfgs = []
            for bl in (16, 32, 64, 128, 256):
                cfgs.append((str(bl), lambda i, bl=bl: mx_dequant_rows[(triton.cdiv(nb, bl),)](
                    sets[i % 2][0], sets[i % 2][1], y, nb, BLOCKS=bl), [y]))
            r = best_triton(cfgs, nbytes)
            r.update(torch_peers(eager, sets, nbytes))
        except Exception as ex:  # keep the other shapes' figures
            r = {"error": repr(ex)[:500]}
        report(f"{m}x{k}", "default", r)
        res["shapes"][f"{m}x{k}"] = {"default": r}
        del sets, y
        torch.cuda.empty_cache()
    with open(sys.argv[1], "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
