# Peers for moe_permute_quantize on the GPU at hand: the eager composition a user writes (stable
# argsort of the expert ids, padded group offsets, index_select of the token rows, rowwise MXFP8 of
# the gathered rows, zero padding rows) and torch.compile of it, timed by warpsmith's protocol and
# by triton.testing.do_bench at the spec's bench shapes (rceil). Timed, not checked bit for bit.
# Usage: python3 moe_permute_quantize.py OUT.json

import torch

from common import header, mx_rows, time_peer, write
from spec_shapes import bench_shapes


SHAPES = bench_shapes("moe_permute_quantize", "T", "H", "E", "K", "A")


def permute_quantize(x, idx, E, A, MP):
    T, K = idx.shape
    flat = idx.reshape(-1)
    order = torch.argsort(flat, stable=True)                     # slots in expert, slot order
    counts = torch.bincount(flat, minlength=E)
    padded = (counts + A - 1) // A * A
    offsets = torch.cumsum(padded, 0)
    starts = offsets - padded
    first = torch.cumsum(counts, 0) - counts
    sorted_e = flat[order]
    rows = starts[sorted_e] + torch.arange(flat.numel(), device=x.device) - first[sorted_e]
    row_slot = torch.full((MP,), -1, dtype=torch.int32, device=x.device)
    row_slot[rows] = order.int()
    slot_row = torch.empty_like(flat)
    slot_row[order] = rows.to(slot_row.dtype)
    xp = torch.zeros(MP, x.shape[1], dtype=x.dtype, device=x.device)
    xp[rows] = x.index_select(0, order // K)
    q, s = mx_rows(xp, True)                                    # zero rows quantize to 0 / 0
    return q, s, row_slot, slot_row.view(T, K).int(), offsets.int()


def main():
    res = header()
    for t, h, e, k, a in SHAPES:
        mp = (t * k + min(e, t * k) * (a - 1) + a - 1) // a * a
        sets = []
        for seed in range(2):
            g = torch.Generator(device="cuda").manual_seed(seed)
            p = 1.0 / torch.arange(1, e + 1, device="cuda", dtype=torch.float32)  # Zipf-like skew
            p = p[torch.randperm(e, device="cuda", generator=g)]
            idx = torch.multinomial(p.expand(t, e), k, replacement=False, generator=g).int()
            sets.append((torch.randn(t, h, device="cuda", dtype=torch.bfloat16), idx))
        nbytes = t * h * 2 + t * k * 4 + mp * (h + h // 32 + 4) + t * k * 4 + e * 4
        out = [torch.empty(mp * (h + h // 32 + 4), device="cuda", dtype=torch.uint8)]
        name = f"T{t}_H{h}_E{e}_K{k}_A{a}"
        res["shapes"][name] = {"rceil": time_peer(
            name, lambda x, idx, e=e, a=a, mp=mp: permute_quantize(x, idx, e, a, mp), sets, nbytes,
            out)}
        del sets, out
        torch.cuda.empty_cache()
    write(res)


if __name__ == "__main__":
    main()
