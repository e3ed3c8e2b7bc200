# The Triton MXFP8 tile quantizer (rowwise and/or columnwise blocks of one read tile) and the torch
# composition of rowwise MXFP8, shared by the colwise, dual and expert-weights peers.
import torch
import triton
import triton.language as tl


@triton.jit
def _mx_exponent(amax, RCEIL: tl.constexpr):
    # The scale exponent e (S = e + 127) from floor/log2/exp2 only, as the rowwise peer does.
    if RCEIL:
        d = tl.maximum(amax * (1.0 / 448.0), 1e-38)
        e = tl.floor(tl.log2(d))
        e = tl.where(tl.exp2(e) < d, e + 1.0, e)
    else:
        e = tl.floor(tl.log2(tl.maximum(amax, 1e-30))) - 8.0
    return tl.minimum(tl.maximum(e, -127.0), 127.0)


@triton.jit
def mx_quant_tile(x_ptr, q_ptr, s_ptr, qt_ptr, st_ptr, R, C, RCEIL: tl.constexpr,
                  ROW: tl.constexpr, COL: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr):
    """One BM x BK tile of matrix program_id(2) of a batch of [R, C] bf16 matrices: rowwise q/s
    (blocks along C) and/or colwise q_t/s_t (blocks along R, stored transposed [C, R])."""
    pm = tl.program_id(0)
    pk = tl.program_id(1)
    base = tl.program_id(2).to(tl.int64) * R * C
    rows = pm * BM + tl.arange(0, BM)
    cols = pk * BK + tl.arange(0, BK)
    mask = (rows[:, None] < R) & (cols[None, :] < C)
    offs = rows[:, None].to(tl.int64) * C + cols[None, :]
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    if ROW:
        xr = tl.reshape(x, (BM, BK // 32, 32))
        e = _mx_exponent(tl.max(tl.abs(xr), axis=2), RCEIL)
        q = xr * tl.exp2(-e)[:, :, None]
        q = tl.minimum(tl.maximum(q, -448.0), 448.0).to(tl.float8e4nv)
        tl.store(q_ptr + base + offs, tl.reshape(q, (BM, BK)), mask=mask)
        sc = pk * (BK // 32) + tl.arange(0, BK // 32)
        s_offs = rows[:, None].to(tl.int64) * (C // 32) + sc[None, :]
        s_mask = (rows[:, None] < R) & (sc[None, :] < C // 32)
        tl.store(s_ptr + base // 32 + s_offs, (e + 127.0).to(tl.uint8), mask=s_mask)
    if COL:
        xc = tl.reshape(x, (BM // 32, 32, BK))
        e = _mx_exponent(tl.max(tl.abs(xc), axis=1), RCEIL)  # (BM/32, BK)
        q = xc * tl.exp2(-e)[:, None, :]
        q = tl.minimum(tl.maximum(q, -448.0), 448.0).to(tl.float8e4nv)
        t_offs = cols[None, :].to(tl.int64) * R + rows[:, None]
        tl.store(qt_ptr + base + t_offs, tl.reshape(q, (BM, BK)), mask=mask)
        sb = pm * (BM // 32) + tl.arange(0, BM // 32)
        st_offs = cols[None, :].to(tl.int64) * (R // 32) + sb[:, None]
        st_mask = (sb[:, None] < R // 32) & (cols[None, :] < C)
        tl.store(st_ptr + base // 32 + st_offs, (e + 127.0).to(tl.uint8), mask=st_mask)


def mx_rows_torch(x, rceil):
    """Eager rowwise MXFP8 of a [R, C] bf16 matrix (blocks along C): q [R, C], s [R, C/32]."""
    r, c = x.shape
    xb = x.float().reshape(r, c // 32, 32)
    amax = xb.abs().amax(-1, keepdim=True)
    if rceil:
        e = torch.ceil(torch.log2((amax * (1.0 / 448.0)).clamp_min(1e-38)))
    else:
        e = torch.floor(torch.log2(amax.clamp_min(1e-30))) - 8
    e = e.clamp(-127, 127)
    q = (xb * torch.exp2(-e)).clamp(-448, 448).to(torch.float8_e4m3fn)
    return q.reshape(r, c), (e + 127).to(torch.uint8).reshape(r, c // 32)


def triton_configs(launch, outs, rows, cols):
    """(label, fn(i), outputs) for the tile shapes that divide nothing in particular: masks
    handle ragged edges, but a colwise tile must not straddle two matrices, so BM | rows."""
    cfgs = []
    for bm in (32, 64, 128):
        if rows % bm:
            continue
        for bk in (64, 128):
            for warps in (4, 8):
                cfgs.append((f"BM={bm},BK={bk},warps={warps}",
                             lambda i, bm=bm, bk=bk, w=warps: launch(i, bm, bk, w), outs))
    return cfgs
