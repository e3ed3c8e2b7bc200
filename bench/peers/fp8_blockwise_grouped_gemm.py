# Peers for fp8_blockwise_grouped_gemm on the GPU at hand (torch has no 1x128 x 128x128 fp32
# block-scaled grouped GEMM, so these are the nearest library calls on the same shapes):
#   "fp8_rowwise": torch._scaled_grouped_mm, E4M3 operands with one fp32 scale per token row and
#                  per expert output column (the target: ours >= 1.0x of it);
#   "bf16":        torch._grouped_mm on the operands dequantized to bf16 beforehand (the
#                  dequantization is not timed).
# Both eager and under torch.compile (PEERS_NO_COMPILE=1 skips compiling), timed by warpsmith's
# protocol and by triton.testing.do_bench (bench/peers/common.py time_peer); not checked bit for
# bit. Groups as spec.json draws them: sizes multiples of 128 summing to M, per its routing
# (gemm_peers.group_offsets; PEERS_ROUTING=V times only that routing). Figures per shape and
# routing: TB/s of the spec's cost.bytes and TFLOP/s of 2*M*N*K. PEERS_WHERE: as gemm_peers.
# Usage: python3 fp8_blockwise_grouped_gemm.py OUT.json

import json, os, sys

import torch

from common import header, time_peer
from gemm_peers import group_offsets, routings
from spec_shapes import bench_shapes, spec_of, wanted

SHAPES = bench_shapes("fp8_blockwise_grouped_gemm", "M", "E", "N", "K")
ROUTINGS = routings(spec_of("fp8_blockwise_grouped_gemm"))


def cost_bytes(m, e, n, k):
    return (m * k + 4 * m * (k // 128) + e * n * k + 4 * e * (n // 128) * (k // 128) + 4 * e
            + 2 * m * n)


def e4m3(shape, gen):
    x = torch.randn(shape, generator=gen, device="cuda") * 100
    return x.clamp(-448, 448).to(torch.float8_e4m3fn)


def make_set(m, e, n, k, seed, routing):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = e4m3((m, k), gen)
    b = e4m3((e, n, k), gen)
    a_scales = torch.rand(k // 128, m, generator=gen, device="cuda") * 3.5e-3 + 5e-4
    b_scales = torch.rand(e, n // 128, k // 128, generator=gen, device="cuda") * 1.8e-3 + 2e-4
    offs = group_offsets(m, e, 128, seed, routing)
    # Rowwise stand-ins for the block scales: one per token row, one per expert column.
    sa_row = a_scales.mean(0).contiguous()                                   # [M]
    sb_col = b_scales.mean(2).repeat_interleave(128, dim=1).contiguous()     # [E, N]
    # Dequantized bf16 operands (the spec's formula, done once, untimed).
    a_bf = (a.float().view(m, k // 128, 128) * a_scales.t()[:, :, None]).view(m, k)
    b_bf = (b.float().view(e, n // 128, 128, k // 128, 128)
            * b_scales[:, :, None, :, None]).view(e, n, k)
    return {"a": a, "b": b, "sa_row": sa_row, "sb_col": sb_col, "offs": offs,
            "a_bf": a_bf.to(torch.bfloat16), "b_bf": b_bf.to(torch.bfloat16)}


def fp8_rowwise(a, b, sa_row, sb_col, offs):
    return torch._scaled_grouped_mm(a, b.transpose(-2, -1), sa_row, sb_col, offs=offs,
                                    out_dtype=torch.bfloat16)


def bf16(a_bf, b_bf, offs):
    return torch._grouped_mm(a_bf, b_bf.transpose(-2, -1), offs=offs)


def main():
    res = header()
    if os.environ.get("PEERS_WHERE"):
        res["where"] = os.environ["PEERS_WHERE"]
    for routing, (m, e, n, k) in ((r, s) for r in ROUTINGS for s in SHAPES):
        if not wanted(dict(M=m, E=e, N=n, K=k)):
            continue
        key = f"{m}x{e}x{n}x{k},routing={routing}"
        nbytes, flops = cost_bytes(m, e, n, k), 2 * m * n * k
        try:
            sets = [make_set(m, e, n, k, seed, routing) for seed in (0, 1)]
            out = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16)]
            r = {"fp8_rowwise": time_peer(
                     f"{key} fp8_rowwise", fp8_rowwise,
                     [(s["a"], s["b"], s["sa_row"], s["sb_col"], s["offs"]) for s in sets],
                     nbytes, out),
                 "bf16": time_peer(
                     f"{key} bf16", bf16, [(s["a_bf"], s["b_bf"], s["offs"]) for s in sets],
                     nbytes, out)}
            for peer in r.values():
                for mode in ("eager", "torch_compile"):
                    us = peer.get(f"{mode}_protocol_us")
                    if us:
                        peer[f"{mode}_protocol_TFLOPs"] = flops / us / 1e6
        except Exception as ex:  # keep the other shapes' figures
            r = {"error": repr(ex)[:500]}
        print(key, r, flush=True)
        res["shapes"][key] = r
        sets = out = None
        torch.cuda.empty_cache()
    with open(sys.argv[1], "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
