# Peers for swiglu_quantize_bwd on the GPU at hand: the eager composition (the SwiGLU gradients in
# fp32, dhpre in bf16, rowwise MXFP8 of dhpre and of dhpre^T) and torch.compile of it, timed by
# warpsmith's protocol and by triton.testing.do_bench at the spec's bench shapes, both variants.
# Timed, not checked. Usage: python3 swiglu_quantize_bwd.py OUT.json

import torch

from common import header, mx_rows, time_peer, write
from spec_shapes import bench_shapes


SHAPES = bench_shapes("swiglu_quantize_bwd", "M", "I")


def swiglu_bwd_quantize(h, da, clamped):
    g, u = h.float().chunk(2, dim=-1)
    d = da.float()
    if clamped:
        gc, uc = g.clamp(max=7.0), u.clamp(-7.0, 7.0)
        s = torch.sigmoid(1.702 * gc)
        du = torch.where((u >= -7) & (u <= 7), d * (gc * s), torch.zeros_like(d))
        dg = torch.where(g <= 7, (d * (uc + 1)) * (s * (1 + 1.702 * gc * (1 - s))),
                         torch.zeros_like(d))
    else:
        s = torch.sigmoid(g)
        du = d * (g * s)
        dg = (d * u) * (s * (1 + g * (1 - s)))
    dh = torch.cat([dg, du], dim=-1).to(torch.bfloat16)
    q, sc = mx_rows(dh, True)
    qt, st = mx_rows(dh.t().contiguous(), True)
    return q, sc, qt, st


def main():
    res = header()
    for m, i in SHAPES:
        sets = [(3 * torch.randn(m, 2 * i, device="cuda", dtype=torch.bfloat16),
                 1e-3 * torch.randn(m, i, device="cuda", dtype=torch.bfloat16)) for _ in range(2)]
        nbytes = m * 2 * i * 2 + m * i * 2 + 2 * (m * 2 * i + m * 2 * i // 32)
        out = [torch.empty(2 * (2 * m * i + 2 * m * i // 32), device="cuda", dtype=torch.uint8)]
        res["shapes"][f"{m}x{i}"] = {
            v: time_peer(f"{m}x{i} {v}",
                         lambda h, da, v=v: swiglu_bwd_quantize(h, da, v == "clamped"), sets,
                         nbytes, out)
            for v in ("standard", "clamped")}
        del sets, out
        torch.cuda.empty_cache()
    write(res)


if __name__ == "__main__":
    main()
