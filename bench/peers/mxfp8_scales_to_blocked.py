# Peers for mxfp8_scales_to_blocked on the GPU at hand: torch eager (torchao-style to_blocked after scattering each group to its 128-padded rows), torch.compile of it, and a Triton kernel per (stripe, column tiles) with the stripe table from torch ops (timed with it). Each is timed two ways in this process:
#   "protocol": warpsmith's own method (CUDA events around the launch only; before every timed
#               launch the outputs are overwritten and the L2 is flushed by reading 4x its size;
#               input sets rotated; median);
#   "do_bench": triton.testing.do_bench, median (Triton only).
# The peers are timed, not checked bit for bit: they follow the rules only approximately.
# Layout of OUT.json as bench/peers/mxfp8_quantize_rowwise.py: shapes -> mode -> figures (TB/s of
# the spec's minimum bytes), plus eager_protocol_TBps. PEERS_NO_COMPILE=1 skips torch.compile.
# Usage: python3 mxfp8_scales_to_blocked.py OUT.json

import json, sys

import torch
import triton
import triton.language as tl

from common import best_triton, header, report, torch_peers
from spec_shapes import bench_shapes


def stripe_sources(offsets, m, g):
    """Per 128-row output stripe: its first input row and how many rows hold data (0..128)."""
    ends = offsets.long()
    starts = torch.cat([ends.new_zeros(1), ends[:-1]])
    n = ends - starts
    nstripes = (n + 127) // 128
    before = torch.cumsum(nstripes, 0) - nstripes
    stripes = (m + 96 * g + 127) // 128
    sidx = torch.arange(stripes, device=offsets.device)
    grp = torch.searchsorted(torch.cumsum(nstripes, 0), sidx, right=True)
    valid = grp < g
    grp = grp.clamp(max=g - 1)
    rel = (sidx - before[grp]) * 128
    first = torch.where(valid, starts[grp] + rel, torch.zeros_like(rel))
    rows = torch.where(valid, (n[grp] - rel).clamp(0, 128), torch.zeros_like(rel))
    return first, rows.int()


@triton.jit
def mx_scales_blocked(s_ptr, first_ptr, rows_ptr, out_ptr, C, C4, TB: tl.constexpr):
    """Stripe program_id(0), column tiles TB * program_id(1) ...: every byte of those tiles."""
    st = tl.program_id(0)
    first = tl.load(first_ptr + st)
    nrows = tl.load(rows_ptr + st)
    r = tl.arange(0, 128)
    c = tl.program_id(1) * (4 * TB) + tl.arange(0, 4 * TB)
    mask = (r[:, None] < nrows) & (c[None, :] < C)
    v = tl.load(s_ptr + (first + r[:, None]).to(tl.int64) * C + c[None, :], mask=mask, other=0)
    t = st.to(tl.int64) * C4 + c[None, :] // 4
    o = t * 512 + (r[:, None] % 32) * 16 + (r[:, None] // 32) * 4 + c[None, :] % 4
    tl.store(out_ptr + o, v, mask=(c[None, :] < 4 * C4) & (r[:, None] >= 0))


def eager(scales, offsets):
    """The torchao-style to_blocked, per group: scatter rows to their padded positions, then the
    (128, 4) -> (32, 16) rearrangement of every tile."""
    m, c = scales.shape
    g = offsets.numel()
    c4 = (c + 3) // 4
    ends = offsets.long()
    starts = torch.cat([ends.new_zeros(1), ends[:-1]])
    padded = (ends - starts + 127) // 128 * 128
    pstart = torch.cumsum(padded, 0) - padded
    stripes = (m + 96 * g + 127) // 128
    rows = torch.arange(m, device=scales.device)
    grp = torch.searchsorted(ends, rows, right=True)
    dest = pstart[grp] + rows - starts[grp]
    buf = torch.zeros(stripes * 128, 4 * c4, device=scales.device, dtype=torch.uint8)
    buf[dest, :c] = scales
    return (buf.view(stripes, 128, c4, 4).permute(0, 2, 1, 3).reshape(stripes * c4, 4, 32, 4)
            .transpose(1, 2).reshape(-1, 512))


def group_offsets(m, g, seed):
    """Skewed group sizes in 32-row units, ~20% empty, summing to m (like the spec's init)."""
    gen = torch.Generator().manual_seed(seed)
    w = torch.rand(g, generator=gen) ** 1.2 * (torch.rand(g, generator=gen) > 0.2)
    if w.sum() == 0:
        w[0] = 1
    units = m // 32
    sizes = torch.floor(w / w.sum() * units).long()
    sizes[torch.argmax(w)] += units - sizes.sum()
    return (torch.cumsum(sizes, 0) * 32).int().cuda()


SHAPES = bench_shapes("mxfp8_scales_to_blocked", "M", "K", "G")


def main():
    res = header()
    for m, k, g in SHAPES:
        c = k // 32
        c4 = (c + 3) // 4
        stripes = (m + 96 * g + 127) // 128
        sets = [(torch.randint(0, 256, (m, c), device="cuda", dtype=torch.uint8),
                 group_offsets(m, g, seed)) for seed in (1, 2)]
        out = torch.empty(stripes * c4, 512, device="cuda", dtype=torch.uint8)
        nbytes = m * c + g * 4 + stripes * c4 * 512
        try:
            cfgs = []
            for tb in (1, 2, 4, 8):
                def run(i, tb=tb):
                    s, offs = sets[i % 2]
                    first, rows = stripe_sources(offs, m, g)
                    mx_scales_blocked[(stripes, triton.cdiv(c4, tb))](s, first, rows, out, c, c4,
                                                                      TB=tb)
                cfgs.append((str(tb), run, [out]))
            r = best_triton(cfgs, nbytes)
            r.update(torch_peers(eager, sets, nbytes))
        except Exception as ex:  # keep the other shapes' figures
            r = {"error": repr(ex)[:500]}
        report(f"{m}x{k}x{g}", "default", r)
        res["shapes"][f"{m}x{k}x{g}"] = {"default": r}
        del sets, out
        torch.cuda.empty_cache()
    with open(sys.argv[1], "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
