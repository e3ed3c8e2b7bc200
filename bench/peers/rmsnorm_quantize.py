# Peers for rmsnorm_quantize on the GPU at hand: the eager composition a user writes (fp32 RMSNorm,
# the HF bf16 roundings, rowwise MXFP8 of y) and torch.compile of it, timed by warpsmith's protocol
# and by triton.testing.do_bench at the spec's bench shapes. Timed, not checked bit for bit.
# Usage: python3 rmsnorm_quantize.py OUT.json

import torch

from common import header, mx_rows, time_peer, write
from spec_shapes import bench_shapes


SHAPES = bench_shapes("rmsnorm_quantize", "M", "H")


def rmsnorm_quantize(x, w, rceil):
    xf = x.float()
    n = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(torch.bfloat16)
    y = (w.float() * n.float()).to(torch.bfloat16)
    q, s = mx_rows(y, rceil)
    return y, q, s


def main():
    res = header()
    for m, h in SHAPES:
        xs = [torch.randn(m, h, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
        w = (1 + 0.3 * torch.randn(h, device="cuda")).to(torch.bfloat16)
        nbytes = m * h * 2 + h * 2 + m * h * 2 + m * h + m * h // 32
        out = [torch.empty(m * h * 3 + m * h // 32, device="cuda", dtype=torch.uint8)]
        res["shapes"][f"{m}x{h}"] = {
            mode: time_peer(f"{m}x{h} {mode}", lambda x, mode=mode: rmsnorm_quantize(x, w, mode == "rceil"),
                            [(x,) for x in xs], nbytes, out)
            for mode in ("rceil", "floor")}
        del xs, out
        torch.cuda.empty_cache()
    write(res)


if __name__ == "__main__":
    main()
