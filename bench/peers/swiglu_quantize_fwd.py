# Peers for swiglu_quantize_fwd on the GPU at hand: the eager composition (SwiGLU in fp32, A in
# bf16, rowwise MXFP8 of A and of A^T) and torch.compile of it, timed by warpsmith's protocol and
# by triton.testing.do_bench at the spec's bench shapes, both variants. Timed, not checked.
# Usage: python3 swiglu_quantize_fwd.py OUT.json

import torch

from common import header, mx_rows, time_peer, write
from spec_shapes import bench_shapes


SHAPES = bench_shapes("swiglu_quantize_fwd", "M", "I")


def swiglu_fwd_quantize(h, clamped):
    g, u = h.float().chunk(2, dim=-1)
    if clamped:
        g = g.clamp(max=7.0)
        a = g * torch.sigmoid(1.702 * g) * (u.clamp(-7.0, 7.0) + 1)
    else:
        a = torch.nn.functional.silu(g) * u
    a = a.to(torch.bfloat16)
    q, s = mx_rows(a, True)
    qt, st = mx_rows(a.t().contiguous(), True)
    return q, s, qt, st


def main():
    res = header()
    for m, i in SHAPES:
        hs = [3 * torch.randn(m, 2 * i, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
        nbytes = m * 2 * i * 2 + 2 * (m * i + m * i // 32)
        out = [torch.empty(2 * (m * i + m * i // 32), device="cuda", dtype=torch.uint8)]
        res["shapes"][f"{m}x{i}"] = {
            v: time_peer(f"{m}x{i} {v}", lambda h, v=v: swiglu_fwd_quantize(h, v == "clamped"),
                         [(h,) for h in hs], nbytes, out)
            for v in ("standard", "clamped")}
        del hs, out
        torch.cuda.empty_cache()
    write(res)


if __name__ == "__main__":
    main()
