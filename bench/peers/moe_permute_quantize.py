# Peers for moe_permute_quantize on the GPU at hand: the eager composition a user writes (stable
# argsort of the expert ids, padded group offsets, index_select of the token rows, rowwise MXFP8 of
# the gathered rows, zero padding rows) and torch.compile of it, timed by warpsmith's protocol and
# by triton.testing.do_bench at the spec's bench shapes (rceil). Timed, not checked bit for bit.
# Usage: python3 moe_permute_quantize.py OUT.json
import json, os, statistics, sys

import torch
import triton
from triton.testing import do_bench


def mx_rows(x, rceil):
    """Rowwise MXFP8 of a bf16 [R, C] tensor (C % 32 == 0): q e4m3 [R, C], scales uint8 [R, C/32]."""
    R, C = x.shape
    xb = x.float().reshape(R, C // 32, 32)
    amax = xb.abs().amax(-1)
    if rceil:
        bits = (amax * (1.0 / 448.0)).view(torch.int32)
        e = (bits >> 23) & 0xFF
        e = e + (((bits & 0x7FFFFF) != 0) & (e < 254)).int()
    else:
        e = (torch.floor(torch.log2(amax.clamp_min(1e-30))) - 8 + 127).clamp(0, 254).int()
    q = (xb * torch.exp2((127 - e).float())[..., None]).clamp(-448, 448).to(torch.float8_e4m3fn)
    return q.reshape(R, C), e.to(torch.uint8)


def protocol_time_us(fn, outputs, iters=100, warmup=5):
    """warpsmith's protocol: median of event-timed launches, each after an output overwrite and a
    read-based L2 flush (4x L2); fn(i) may rotate inputs."""
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


def time_peer(name, fn, args_sets, nbytes, outputs):
    """fn(*args) -> outputs tuple; timed eager and torch.compile'd, by the protocol and do_bench.
    The peers allocate their outputs (as a user's code would); `outputs` are overwritten before
    each launch anyway to keep the protocol's traffic the same."""
    res = {}
    variants = [("eager", fn)]
    if not os.environ.get("PEERS_NO_COMPILE"):  # torch.compile costs minutes of compiling
        variants.append(("torch_compile", torch.compile(fn)))
    for label, f in variants:
        try:
            f(*args_sets[0])
            torch.cuda.synchronize()
            us = protocol_time_us(lambda i: f(*args_sets[i % len(args_sets)]), outputs)
            ms = do_bench(lambda: f(*args_sets[0]), warmup=25, rep=200, return_mode="median")
            res[f"{label}_protocol_us"] = us
            res[f"{label}_protocol_TBps"] = nbytes / us / 1e6
            res[f"{label}_do_bench_TBps"] = nbytes / ms / 1e9
        except Exception as ex:  # keep the other peers' figures
            res[f"{label}_error"] = repr(ex)[:500]
    print(name, {k: round(v, 3) if isinstance(v, float) else v for k, v in res.items()}, flush=True)
    return res


def header():
    props = torch.cuda.get_device_properties(0)
    return {"gpu": props.name, "torch": torch.__version__, "triton": triton.__version__,
            "shapes": {}}


def write(res):
    with open(sys.argv[1], "w") as f:
        json.dump(res, f, indent=1)


SHAPES = [(16384, 7168, 256, 8, 128), (16384, 2048, 128, 8, 32), (16384, 4096, 8, 2, 128),
          (16384, 5120, 16, 1, 32)]


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
