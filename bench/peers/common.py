# What the peer scripts share: warpsmith's timing protocol, do_bench, the JSON header and writer,
# the two ways the scripts time their peers (Triton configs plus torch eager/compile; torch
# compositions with their own outputs), and the torch composition of rowwise MXFP8.
import json, os, statistics, sys, time

import torch
import triton
from triton.testing import do_bench


WARMUP_MS = 100  # evaluator/evaluate.cc kWarmupMs


def protocol_time_us(fn, outputs, iters=None, warmup=3):
    """warpsmith's protocol (the evaluator's, evaluator/evaluate.cc): `warmup` launches, then more,
    each synchronized, until WARMUP_MS have passed since the first (clocks ramp from idle, and a
    power-bound kernel settles at its sustained clock); then `iters` timed launches (default the
    evaluator's rule: 300 ms of work, 20 to 200 launches), each after an output overwrite and a
    read-based L2 flush (4x L2); the median. fn(i) may rotate inputs."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(4 * l2 // 4, dtype=torch.float32, device="cuda").uniform_()
    i = 0

    def launch():
        nonlocal i
        for o in outputs:
            o.view(torch.uint8).fill_(0xA5)
        flush.sum()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(i)
        b.record()
        i += 1
        return a, b

    start = time.perf_counter()
    while i < warmup or (time.perf_counter() - start) * 1e3 < WARMUP_MS:
        a, b = launch()
        torch.cuda.synchronize()
    if iters is None:
        iters = int(min(max(300000.0 / max(a.elapsed_time(b) * 1e3, 1.0), 20), 200))
    times = [launch() for _ in range(iters)]
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) * 1e3 for a, b in times)


def header():
    props = torch.cuda.get_device_properties(0)
    return {"gpu": props.name, "torch": torch.__version__, "triton": triton.__version__,
            "shapes": {}}


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


def report(shape, mode, r):
    keys = ("triton_protocol_TBps", "triton_do_bench_TBps", "eager_protocol_TBps",
            "torch_compile_protocol_TBps")
    print(f"{shape} {mode}: " + ", ".join(f"{k} {r.get(k)}" for k in keys)
          + (f" (BLOCKS={r.get('triton_BLOCKS')})" if "triton_BLOCKS" in r else ""), flush=True)


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


def write(res):
    with open(sys.argv[1], "w") as f:
        json.dump(res, f, indent=1)
