# Peers for moe_decode_fused on the GPU at hand, at the spec's bench shapes: the expert-centric
# path a torch user writes (stable argsort of the expert ids, gather of the token rows,
# torch._grouped_mm for gate/up, silu * up, torch._grouped_mm for down, weighted index_add in
# fp32, bf16) eager and under torch.compile, and the per-expert loop of Hugging Face style MoE
# blocks (eager; it syncs on the host for the expert list). Timed by warpsmith's protocol and by
# triton.testing.do_bench; not checked bit for bit. TB/s use the spec's cost.bytes (the evaluator's
# figure); "distinct_weight_bytes" is what the routing of the first input set really touches.
# Usage: python3 moe_decode_fused.py OUT.json

import torch
import torch.nn.functional as F

from common import header, protocol_time_us, time_peer, write
from spec_shapes import bench_shapes


# (T, E, K, H, I), the spec's bench shapes in order.
SHAPES = bench_shapes("moe_decode_fused", "T", "E", "TOPK", "H", "I")


def spec_bytes(T, E, K, H, I):
    return 4 * T * H + 8 * T * K + max(K, min(E, T * K) // 2) * 6 * H * I


def moe_grouped_mm(x, ids, w, w13, w2):
    T, K = ids.shape
    E, I = w2.shape[0], w2.shape[2]
    flat = ids.reshape(-1).long()
    order = torch.argsort(flat, stable=True)
    offs = torch.cumsum(torch.bincount(flat, minlength=E), 0).int()
    tok = order // K
    xs = x.index_select(0, tok)                                   # [T*K, H], expert order
    gu = torch._grouped_mm(xs, w13.transpose(1, 2), offs=offs)   # [T*K, 2I]
    h = F.silu(gu[:, :I]) * gu[:, I:]
    yo = torch._grouped_mm(h, w2.transpose(1, 2), offs=offs)     # [T*K, H]
    yo = yo.float() * w.reshape(-1)[order, None]
    y = torch.zeros(T, x.shape[1], dtype=torch.float32, device=x.device)
    return y.index_add_(0, tok, yo).to(torch.bfloat16)


def moe_loop(x, ids, w, w13, w2):
    I = w2.shape[2]
    y = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    for e in ids.unique().tolist():
        tok, j = (ids == e).nonzero(as_tuple=True)
        gu = x[tok] @ w13[e].t()
        h = F.silu(gu[:, :I]) * gu[:, I:]
        y.index_add_(0, tok, (h @ w2[e].t()).float() * w[tok, j, None])
    return y.to(torch.bfloat16)


def main():
    res = header()
    for T, E, K, H, I in SHAPES:
        w13 = (torch.randn(E, 2 * I, H, device="cuda", dtype=torch.bfloat16) * 0.02)
        w2 = (torch.randn(E, H, I, device="cuda", dtype=torch.bfloat16) * 0.02)
        sets = []
        for seed in range(2):
            g = torch.Generator(device="cuda").manual_seed(seed)
            ids = torch.rand(T, E, device="cuda", generator=g).argsort(dim=1)[:, :K].int()
            w = torch.rand(T, K, device="cuda", generator=g) * 0.45 + 0.05
            x = torch.randn(T, H, device="cuda", dtype=torch.bfloat16, generator=g)
            sets.append((x, ids, w, w13, w2))
        nbytes = spec_bytes(T, E, K, H, I)
        out = [torch.empty(T * H * 2, device="cuda", dtype=torch.uint8)]
        name = f"T{T}_E{E}_K{K}_H{H}_I{I}"
        r = {"spec_bytes": nbytes,
             "distinct_weight_bytes": sets[0][1].unique().numel() * 6 * H * I}
        r["grouped_mm"] = time_peer(f"{name} grouped_mm", moe_grouped_mm, sets, nbytes, out)
        try:
            us = protocol_time_us(lambda i: moe_loop(*sets[i % len(sets)]), out, iters=50)
            r["loop"] = {"eager_protocol_us": us, "eager_protocol_TBps": nbytes / us / 1e6}
        except Exception as ex:  # keep the other peers' figures
            r["loop"] = {"eager_error": repr(ex)[:500]}
        print(name, "loop", r["loop"], flush=True)
        res["shapes"][name] = {"default": r}
        del sets, out, w13, w2
        torch.cuda.empty_cache()
    write(res)


if __name__ == "__main__":
    main()
