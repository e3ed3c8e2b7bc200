# Peers for moe_unpermute_combine on the GPU at hand: the eager composition a user writes
# (index_select of the K rows per token, weighted sum in fp32, optional shared expert, bf16) and
# torch.compile of it, timed by warpsmith's protocol and by triton.testing.do_bench at the spec's
# bench shapes, shared=none and shared=add. Timed, not checked bit for bit.
# Usage: python3 moe_unpermute_combine.py OUT.json
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
