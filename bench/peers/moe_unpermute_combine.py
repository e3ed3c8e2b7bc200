# Peers for moe_unpermute_combine on the GPU at hand: the eager composition a user writes
# (index_select of the K rows per token, weighted sum in fp32, optional shared expert, bf16) and
# torch.compile of it, timed by warpsmith's protocol and by triton.testing.do_bench at the spec's
# bench shapes, shared=none and shared=add. Timed, not checked bit for bit.
# Usage: python3 moe_unpermute_combine.py OUT.json

import torch

from common import header, time_peer, write
from spec_shapes import bench_shapes


SHAPES = bench_shapes("moe_unpermute_combine", "T", "H", "E", "K", "A")


def combine(y_p, w, slot_row, y_shared, add):
    T, K = slot_row.shape
    g = y_p.index_select(0, slot_row.reshape(-1).long()).view(T, K, -1).float()
    acc = (g * w[..., None]).sum(1)
    if add:
        acc = acc + y_shared.float()
    return acc.to(torch.bfloat16)


def main():
    res = header()
    for t, h, e, k, a in SHAPES:
        mp = (t * k + min(e, t * k) * (a - 1) + a - 1) // a * a
        sets = []
        for _ in range(2):
            # distinct rows within a token, spread over all of y_p (a random gather)
            base = torch.randint(0, mp, (t, 1), device="cuda")
            rows = ((base + torch.arange(k, device="cuda") * (mp // k)) % mp).int()
            sets.append((torch.randn(mp, h, device="cuda", dtype=torch.bfloat16),
                         torch.rand(t, k, device="cuda"), rows,
                         torch.randn(t, h, device="cuda", dtype=torch.bfloat16)))
        out = [torch.empty(t * h * 2, device="cuda", dtype=torch.uint8)]
        name = f"T{t}_H{h}_E{e}_K{k}_A{a}"
        shape_res = {}
        for mode in ("none", "add"):
            nbytes = t * k * h * 2 + t * k * 8 + t * h * 2 + (t * h * 2 if mode == "add" else 0)
            shape_res[mode] = time_peer(
                f"{name} shared={mode}",
                lambda y_p, w, sr, ys, add=(mode == "add"): combine(y_p, w, sr, ys, add), sets,
                nbytes, out)
        res["shapes"][name] = shape_res
        del sets, out
        torch.cuda.empty_cache()
    write(res)


if __name__ == "__main__":
    main()
