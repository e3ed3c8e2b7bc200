# Peers for mxfp8_quantize_rowwise on the GPU at hand: a Triton kernel (the anchors' mx_quant_rows,
# with an rceil variant) and torch.compile of the eager composition a user writes first, and plain
# data movement of the same size (a copy, a bf16 -> e4m3 cast) to show what the size allows. Each is
# timed two ways in this process:
#   "protocol": warpsmith's own method (CUDA events around the launch only; before every timed
#               launch the outputs are overwritten and the L2 is flushed by reading 4x its size;
#               input sets rotated; median);
#   "do_bench": triton.testing.do_bench, median (it zeroes 256 MB before every launch).
# The peers are timed, not checked bit for bit: they follow the rules only approximately.
# Usage: python3 mxfp8_quantize_rowwise.py OUT.json

import json, os, sys

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

from common import protocol_time_us
from spec_shapes import bench_shapes

SHAPES = bench_shapes("mxfp8_quantize_rowwise", "M", "K")


@triton.jit
def mx_quant_rows(x_ptr, q_ptr, s_ptr, n_blocks, RCEIL: tl.constexpr, BLOCKS: tl.constexpr):
    pid = tl.program_id(0)
    blk = pid * BLOCKS + tl.arange(0, BLOCKS)
    offs = blk[:, None] * 32 + tl.arange(0, 32)[None, :]
    mask = blk[:, None] < n_blocks
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    amax = tl.max(tl.abs(x), axis=1)
    if RCEIL:
        # ceil(log2(amax / 448)) from floor and exp2 only (the constructs the anchors used).
        d = tl.maximum(amax * (1.0 / 448.0), 1e-38)
        e = tl.floor(tl.log2(d))
        e = tl.where(tl.exp2(e) < d, e + 1.0, e)
    else:
        e = tl.floor(tl.log2(tl.maximum(amax, 1e-30))) - 8.0
    e = tl.minimum(tl.maximum(e, -127.0), 127.0)  # tl.clamp fails to lower here (Triton 3.6)
    scale = tl.exp2(-e)
    q = tl.minimum(tl.maximum(x * scale[:, None], -448.0), 448.0).to(tl.float32).to(tl.float8e4nv)
    tl.store(q_ptr + offs, q, mask=mask)
    tl.store(s_ptr + blk, (e + 127.0).to(tl.uint8), mask=blk < n_blocks)


def eager(x, rceil):
    xb = x.view(-1, 32).float()
    amax = xb.abs().amax(1, keepdim=True)
    if rceil:
        e = torch.ceil(torch.log2((amax * (1.0 / 448.0)).clamp_min(1e-38)))
    else:
        e = torch.floor(torch.log2(amax.clamp_min(1e-30))) - 8
    e = e.clamp(-127, 127)
    q = (xb * torch.exp2(-e)).clamp(-448, 448).to(torch.float8_e4m3fn)
    return q, (e + 127).to(torch.uint8)


def measure_mode(m, k, xs, q, s, rceil):
    """The best Triton launch (protocol timing) and its do_bench figure, and torch.compile."""
    nb = m * k // 32
    nbytes = m * k * 2 + m * k + nb
    best = None
    for bl in (32, 64, 128, 256):
        grid = (triton.cdiv(nb, bl),)
        run = lambda i, bl=bl, grid=grid: mx_quant_rows[grid](xs[i % 2], q, s, nb, RCEIL=rceil,
                                                               BLOCKS=bl)
        us = protocol_time_us(run, [q, s])
        if best is None or us < best[1]:
            best = (bl, us)
    bl, best_us = best
    grid = (triton.cdiv(nb, bl),)
    counter = [0]

    def step():
        counter[0] += 1
        mx_quant_rows[grid](xs[counter[0] % 2], q, s, nb, RCEIL=rceil, BLOCKS=bl)

    db_ms = do_bench(step, warmup=25, rep=200, return_mode="median")
    c_tbps = None
    if not os.environ.get("PEERS_NO_COMPILE"):  # torch.compile costs minutes of compiling
        compiled = torch.compile(lambda x: eager(x, rceil))
        compiled(xs[0])
        c_tbps = nbytes / protocol_time_us(lambda i: compiled(xs[i % 2]), [q, s], iters=50) / 1e6
    return {"triton_protocol_us": best_us, "triton_BLOCKS": bl,
            "triton_protocol_TBps": nbytes / best_us / 1e6,
            "triton_do_bench_TBps": nbytes / db_ms / 1e9,
            "torch_compile_protocol_TBps": c_tbps}


def measure_copies(m, k, xs, q):
    """What plain data movement of the quantizer's size reaches under the same protocol: a byte
    copy moving the same total bytes (half read, half written), and torch's bf16 -> e4m3 cast
    (the quantizer's read/write pattern without the scales: 2 bytes in, 1 out per element)."""
    nbytes = m * k * 2 + m * k + m * k // 32
    src = torch.empty(nbytes // 2, device="cuda", dtype=torch.uint8).random_(0, 256)
    dst = torch.empty_like(src)
    copy_us = protocol_time_us(lambda i: dst.copy_(src), [dst])
    cast_us = protocol_time_us(lambda i: q.copy_(xs[i % 2]), [q])
    return {"copy_same_bytes_us": copy_us, "copy_same_bytes_TBps": 2 * (nbytes // 2) / copy_us / 1e6,
            "cast_bf16_e4m3_us": cast_us, "cast_bf16_e4m3_TBps": 3 * m * k / cast_us / 1e6}


def main():
    out_path = sys.argv[1]
    props = torch.cuda.get_device_properties(0)
    res = {"gpu": props.name, "torch": torch.__version__, "triton": triton.__version__, "shapes": {}}
    for m, k in SHAPES:
        xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) * (2.0 ** i) for i in (0, 5)]
        q = torch.empty(m, k, device="cuda", dtype=torch.float8_e4m3fn)
        s = torch.empty(m * k // 32, device="cuda", dtype=torch.uint8)
        shape_res = {}
        for mode in ("rceil", "floor"):
            try:
                r = measure_mode(m, k, xs, q, s, mode == "rceil")
                print(f"{m}x{k} {mode}: triton {r['triton_protocol_TBps']:.3f} TB/s (protocol, "
                      f"BLOCKS={r['triton_BLOCKS']}), {r['triton_do_bench_TBps']:.3f} (do_bench); "
                      f"torch.compile {r['torch_compile_protocol_TBps']}", flush=True)
            except Exception as ex:  # keep the other modes' and shapes' figures
                r = {"error": repr(ex)[:500]}
                print(f"{m}x{k} {mode}: peer failed: {ex!r}"[:300], flush=True)
            shape_res[mode] = r
        try:
            shape_res["copy"] = measure_copies(m, k, xs, q)
            print(f"{m}x{k} copy: {shape_res['copy']}", flush=True)
        except Exception as ex:
            shape_res["copy"] = {"error": repr(ex)[:500]}
        res["shapes"][f"{m}x{k}"] = shape_res
        del xs, q, s
        torch.cuda.empty_cache()
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
