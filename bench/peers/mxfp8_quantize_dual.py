# Peers for mxfp8_quantize_dual on the GPU at hand: a Triton tile kernel quantizing one read tile both ways, torch eager (rowwise + transpose + rowwise) and torch.compile of it. Each is timed two ways in this process:
#   "protocol": warpsmith's own method (CUDA events around the launch only; before every timed
#               launch the outputs are overwritten and the L2 is flushed by reading 4x its size;
#               input sets rotated; median);
#   "do_bench": triton.testing.do_bench, median (Triton only).
# The peers are timed, not checked bit for bit: they follow the rules only approximately.
# Layout of OUT.json as bench/peers/mxfp8_quantize_rowwise.py: shapes -> mode -> figures (TB/s of
# the spec's minimum bytes), plus eager_protocol_TBps. PEERS_NO_COMPILE=1 skips torch.compile.
# Usage: python3 mxfp8_quantize_dual.py OUT.json
import json, os, statistics, sys

import torch
import triton
import triton.language as tl
from triton.testing import do_bench


def protocol_time_us(fn, outputs, iters=100, warmup=5):
    """warpsmith's protocol: median of event-timed launches, each after an output overwrite and a
    read-based L2 flush (4x L2); fn(i) gets the iteration index to rotate its inputs."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(4 * l2 // 4, dtype=torch.float32, device="cuda").uniform_()
    times = []
    for i in range(warmup + iters):
        for o in outputs:
            o.view(torch.uint8).fill_(0xA5)
        flush.sum()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(i)
        b.record()
        if i >= warmup:
            times.append((a, b))
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) * 1e3 for a, b in times)


def do_bench_us(fn):
    counter = [0]

    def step():
        counter[0] += 1
        fn(counter[0])

    return do_bench(step, warmup=25, rep=200, return_mode="median") * 1e3


def best_triton(configs, nbytes):
    """configs: [(label, fn(i), outputs)]; the best by protocol time, then its do_bench figure."""
    best = None
    for label, fn, outs in configs:
        try:
            us = protocol_time_us(fn, outs)
        except Exception as ex:  # a config that does not compile or fit: try the others
            print(f"  triton {label}: {ex!r}"[:200], flush=True)
            continue
        if best is None or us < best[1]:
            best = (label, us, fn)
    if best is None:
        return {"triton_error": "no configuration ran"}
    label, us, fn = best
    return {"triton_protocol_us": us, "triton_BLOCKS": label,
            "triton_protocol_TBps": nbytes / us / 1e6,
            "triton_do_bench_TBps": nbytes / do_bench_us(fn) / 1e6}


def torch_peers(fn, input_sets, nbytes, iters=50):
    """fn(*tensors) eager and under torch.compile (PEERS_NO_COMPILE=1 skips the minutes of
    compiling), input sets rotated; the outputs are fresh allocations, so nothing to overwrite."""
    r = {}
    n = len(input_sets)
    try:
        r["eager_protocol_TBps"] = nbytes / protocol_time_us(
            lambda i: fn(*input_sets[i % n]), [], iters=iters) / 1e6
    except Exception as ex:
        r["eager_error"] = repr(ex)[:300]
    r["torch_compile_protocol_TBps"] = None
    if not os.environ.get("PEERS_NO_COMPILE"):
        try:
            compiled = torch.compile(fn)
            compiled(*input_sets[0])
            r["torch_compile_protocol_TBps"] = nbytes / protocol_time_us(
                lambda i: compiled(*input_sets[i % n]), [], iters=iters) / 1e6
        except Exception as ex:
            r["torch_compile_error"] = repr(ex)[:300]
    return r


def header():
    props = torch.cuda.get_device_properties(0)
    return {"gpu": props.name, "torch": torch.__version__, "triton": triton.__version__,
            "shapes": {}}


def report(shape, mode, r):
    keys = ("triton_protocol_TBps", "triton_do_bench_TBps", "eager_protocol_TBps",
            "torch_compile_protocol_TBps")
    print(f"{shape} {mode}: " + ", ".join(f"{k} {r.get(k)}" for k in keys)
          + (f" (BLOCKS={r.get('triton_BLOCKS')})" if "triton_BLOCKS" in r else ""), flush=True)


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

SHAPES = [(131072, 7168), (131072, 2048), (65536, 5120), (65536, 4096), (16384, 2880)]  # (M, K)


def eager(x, rceil):
    q, s = mx_rows_torch(x, rceil)
    q_t, s_t = mx_rows_torch(x.t().contiguous(), rceil)
    return q, s, q_t, s_t


def main():
    res = header()
    for m, k in SHAPES:
        xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) * (2.0 ** i) for i in (0, 5)]
        q = torch.empty(m, k, device="cuda", dtype=torch.float8_e4m3fn)
        s = torch.empty(m, k // 32, device="cuda", dtype=torch.uint8)
        q_t = torch.empty(k, m, device="cuda", dtype=torch.float8_e4m3fn)
        s_t = torch.empty(k, m // 32, device="cuda", dtype=torch.uint8)
        nbytes = m * k * 2 + 2 * (m * k + m * k // 32)
        shape_res = {}
        for mode in ("rceil", "floor"):
            rceil = mode == "rceil"
            try:
                def launch(i, bm, bk, w):
                    grid = (triton.cdiv(m, bm), triton.cdiv(k, bk), 1)
                    mx_quant_tile[grid](xs[i % 2], q, s, q_t, s_t, m, k, RCEIL=rceil,
                                        ROW=True, COL=True, BM=bm, BK=bk, num_warps=w)
                r = best_triton(triton_configs(launch, [q, s, q_t, s_t], m, k), nbytes)
                r.update(torch_peers(lambda x, rc=rceil: eager(x, rc), [(x,) for x in xs], nbytes))
            except Exception as ex:  # keep the other modes' and shapes' figures
                r = {"error": repr(ex)[:500]}
            report(f"{m}x{k}", mode, r)
            shape_res[mode] = r
        res["shapes"][f"{m}x{k}"] = shape_res
        del xs, q, s, q_t, s_t
        torch.cuda.empty_cache()
    with open(sys.argv[1], "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
