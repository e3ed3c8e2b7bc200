# Peers of the GEMM problems on the GPU at hand, at each problem's bench shapes (read from its
# spec.json): the library call a torch user makes for the same product.
#   bf16_gemm:               torch.mm (cuBLAS)
#   fp8_rowwise_gemm:        torch._scaled_mm, rowwise fp32 scales (cuBLASLt); the JSON's
#                            "accuracy" holds its error against fp64 with and without
#                            use_fast_accum (and the fast form's time), never a ratio's peer
#   bf16_grouped_gemm:       torch._grouped_mm, in the problem's form (fwd, dgrad, wgrad)
#   mxfp8_grouped_gemm_*:    torch._grouped_mm on the operands dequantized to bf16 beforehand
#                            ("bf16", the 1.0x mark), and torch._scaled_grouped_mm with
#                            one fp32 scale per row and column ("fp8_rowwise", a coarser recipe)
# Eager only (one library call each: torch.compile adds nothing), timed by warpsmith's protocol
# (common.protocol_time_us); dequantization and layout changes are done once, untimed. Groups as
# the specs draw them, multiples of the spec's alignment: under routing=skewed skewed sizes, about
# 15% empty; under routing=balanced sizes within +-50% of the mean, none empty (PEERS_ROUTING=V
# times only that routing).
# Figures per shape: microseconds, TFLOP/s of 2*M*N*K, TB/s of the spec's cost.bytes.
# Usage: python3 gemm_peers.py PROBLEM OUT.json   (the per-problem scripts call main(PROBLEM))

import json, os, re, sys

import torch

from common import header, protocol_time_us
from spec_shapes import bench_shapes, spec_of, wanted


def routings(spec):
    """The values of the problem's routing parameter, each a setting word of a peer's key
    (PEERS_ROUTING=V keeps only V); [None] for a problem without one."""
    values = (spec.get("params") or {}).get("routing", {}).get("values")
    if not values:
        return [None]
    only = os.environ.get("PEERS_ROUTING")
    return [r for r in values if not only or r == only]


def cost(expr, syms):
    """The spec's int64 cost expression (C division) under the symbols."""
    return int(eval(re.sub(r"(?<![/])/(?![/])", "//", expr), {}, dict(syms)))


def group_offsets(m, e, align, seed, routing="skewed"):
    """Cumulative END offsets (int32, device): multiples of `align` summing to m (the last
    nonempty group takes the remainder); skewed sizes with about 15% of the groups empty, or
    under routing "balanced" sizes within +-50% of the mean and none empty."""
    gen = torch.Generator().manual_seed(seed)
    blocks = m // align
    if routing == "balanced":
        w = torch.rand(e, generator=gen) + 0.5
    else:
        w = torch.rand(e, generator=gen) ** 2 + 0.05
        w[torch.rand(e, generator=gen) < 0.15] = 0.0
    if w.sum() == 0:
        w[-1] = 1.0
    sizes = (w / w.sum() * blocks).floor().long()
    sizes[torch.nonzero(w).flatten()[-1]] += blocks - sizes.sum()
    return (torch.cumsum(sizes, 0) * align).to(torch.int32).cuda()


def randn(shape, std=1.0, dtype=torch.bfloat16):
    return (torch.randn(shape, device="cuda") * std).to(dtype)


def e4m3(shape):
    return (torch.randn(shape, device="cuda") * 100).clamp(-448, 448).to(torch.float8_e4m3fn)


def rowscale(n):
    return torch.rand(n, device="cuda") * 1e-3 + 1e-4


# Each maker returns {peer: (fn, outputs)} for one input set; fn takes no arguments.
def make_bf16_gemm(s, form, routing):
    a, b = randn((s["M"], s["K"])), randn((s["N"], s["K"]))
    return {"cublas_bf16": lambda: torch.mm(a, b.t())}


def fp8_rowwise_operands(s):
    """a [M,K], b [N,K] E4M3 and their fp32 row / column scales."""
    a, b = e4m3((s["M"], s["K"])), e4m3((s["N"], s["K"]))
    return a, b, rowscale(s["M"])[:, None], rowscale(s["N"])[None, :]


def make_fp8_rowwise_gemm(s, form, routing):
    a, b, sa, sb = fp8_rowwise_operands(s)
    return {"cublaslt_fp8_rowwise": lambda: torch._scaled_mm(a, b.t(), sa, sb,
                                                              out_dtype=torch.bfloat16)}


def fp8_rowwise_accuracy(s):
    """How exact the FP8 rowwise peer is: its relative Frobenius error against an fp64 product
    of the same operands, with use_fast_accum False (the timed peer) and True (time and error),
    so a gap to the peer can be read as exact against exact or not. Untimed unless stated."""
    a, b, sa, sb = fp8_rowwise_operands(s)
    want = (a.double() @ b.double().t()) * sa.double() * sb.double()
    out = {}
    for fast in (False, True):
        fn = lambda: torch._scaled_mm(a, b.t(), sa, sb, out_dtype=torch.bfloat16,
                                      use_fast_accum=fast)
        got = fn().double()
        r = {"rel_frobenius": float((got - want).norm() / want.norm())}
        if fast:
            r["protocol_us"] = protocol_time_us(lambda i: fn(), [])
        out["use_fast_accum=" + str(fast).lower()] = r
    return out


ACCURACY = {"fp8_rowwise_gemm": fp8_rowwise_accuracy}


def grouped(form, m, e, n, k, align, dtype_fp8, routing):
    """The grouped product in the problem's form, as torch's grouped calls take it:
    fwd [M,K] x [E,N,K]^T -> [M,N]; dgrad [M,N] x [E,N,K] -> [M,K] (contraction N);
    wgrad [N,M] x [M,K] -> [E,N,K] (contraction over each group's rows)."""
    offs = group_offsets(m, e, align, 0, routing)
    peers = {}
    if form == "fwd":
        a, b = randn((m, k)), randn((e, n, k))
        peers["bf16"] = lambda: torch._grouped_mm(a, b.transpose(-2, -1), offs=offs)
        if dtype_fp8:
            qa, qb = e4m3((m, k)), e4m3((e, n, k))
            sa, sb = rowscale(m), rowscale(e * n).view(e, n)
            peers["fp8_rowwise"] = lambda: torch._scaled_grouped_mm(
                qa, qb.transpose(-2, -1), sa, sb, offs=offs, out_dtype=torch.bfloat16)
    elif form == "dgrad":
        a = randn((m, n))
        # torch wants the second operand's inner dim contiguous: [E, K, N] viewed as [E, N, K].
        bt = randn((e, k, n))
        peers["bf16"] = lambda: torch._grouped_mm(a, bt.transpose(-2, -1), offs=offs)
        if dtype_fp8:
            qa, qbt = e4m3((m, n)), e4m3((e, k, n))
            sa, sb = rowscale(m), rowscale(e * k).view(e, k)
            peers["fp8_rowwise"] = lambda: torch._scaled_grouped_mm(
                qa, qbt.transpose(-2, -1), sa, sb, offs=offs, out_dtype=torch.bfloat16)
    else:  # wgrad
        at, x = randn((n, m)), randn((k, m))
        peers["bf16"] = lambda: torch._grouped_mm(at, x.t(), offs=offs)
        if dtype_fp8:
            qa, qx = e4m3((n, m)), e4m3((k, m))
            sa, sb = rowscale(e * n), rowscale(e * k)
            peers["fp8_rowwise"] = lambda: torch._scaled_grouped_mm(
                qa, qx.t(), sa, sb, offs=offs, out_dtype=torch.bfloat16)
    return peers


def make_bf16_grouped_gemm(s, form, routing):
    return grouped(form, s["M"], s["E"], s["N"], s["K"], 16, False, routing)


def make_mxfp8(form):
    return lambda s, _, routing: grouped(form, s["M"], s["E"], s["N"], s["K"], 32, True, routing)


MAKERS = {
    "bf16_gemm": (make_bf16_gemm, [None]),
    "fp8_rowwise_gemm": (make_fp8_rowwise_gemm, [None]),
    "bf16_grouped_gemm": (make_bf16_grouped_gemm, ["fwd", "dgrad", "wgrad"]),
    "mxfp8_grouped_gemm_fwd": (make_mxfp8("fwd"), [None]),
    "mxfp8_grouped_gemm_dgrad": (make_mxfp8("dgrad"), [None]),
    "mxfp8_grouped_gemm_wgrad": (make_mxfp8("wgrad"), [None]),
}
FORM_CODE = {None: 0, "fwd": 0, "dgrad": 1, "wgrad": 2}


def main(problem, out_path):
    spec = spec_of(problem)
    maker, forms = MAKERS[problem]
    res = header()
    res["problem"] = problem
    if os.environ.get("PEERS_WHERE"):
        res["where"] = os.environ["PEERS_WHERE"]
    for form, routing, s in ((f, r, s) for f in forms for r in routings(spec)
                             for s in bench_shapes(problem)):
        if not wanted(s):
            continue
        syms = dict(s, form=FORM_CODE[form])
        key = (",".join(f"{k}={v}" for k, v in s.items()) + (f",form={form}" if form else "")
               + (f",routing={routing}" if routing else ""))
        flops, nbytes = 2 * s["M"] * s["N"] * s["K"], cost(spec["cost"]["bytes"], syms)
        r = {}
        try:
            peers = maker(s, form, routing)
            for name, fn in peers.items():
                try:
                    fn()
                    torch.cuda.synchronize()
                    us = protocol_time_us(lambda i: fn(), [])
                    r[name] = {"protocol_us": us, "TFLOPs": flops / us / 1e6,
                               "TBps": nbytes / us / 1e6}
                except Exception as ex:  # keep the other peers' figures
                    r[name] = {"error": repr(ex)[:400]}
        except Exception as ex:
            r = {"error": repr(ex)[:400]}
        print(key, json.dumps(r), flush=True)
        res["shapes"][key] = r
        peers = None
        torch.cuda.empty_cache()
        if problem in ACCURACY:  # kept apart from the timed peers: never a ratio's peer
            try:
                acc = ACCURACY[problem](s)
            except Exception as ex:
                acc = {"error": repr(ex)[:400]}
            print(key, "accuracy", json.dumps(acc), flush=True)
            res.setdefault("accuracy", {})[key] = acc
            torch.cuda.empty_cache()
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
