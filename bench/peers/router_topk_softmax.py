# Peers for router_topk_softmax on the GPU at hand: the torch composition Qwen3 / Mixtral use
# (softmax in fp32, topk, renormalize, bincount for the per-expert counts), eager and
# torch.compile, at the problem's bench shapes; timing in router_common.py.
# Usage: python3 router_topk_softmax.py OUT.json

import json, os, sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from router_common import measure  # noqa: E402
from spec_shapes import bench_shapes

SHAPES = bench_shapes("router_topk_softmax", "T", "E", "K")


def make_route(k, renormalize):
    def route(logits):
        p = torch.softmax(logits, dim=-1, dtype=torch.float32)
        w, idx = torch.topk(p, k, dim=-1)
        if renormalize:
            w = w / w.sum(dim=-1, keepdim=True)
        counts = torch.bincount(idx.flatten(), minlength=logits.shape[1]).to(torch.int32)
        return idx.to(torch.int32), w, counts
    return route


def main():
    out_path = sys.argv[1]
    props = torch.cuda.get_device_properties(0)
    res = {"gpu": props.name, "torch": torch.__version__, "triton": triton.__version__, "shapes": {}}
    for t, e, k in SHAPES:
        sets = [(torch.randn(t, e, device="cuda") * 2.0,) for _ in range(2)]
        nbytes = t * e * 4 + t * k * 8 + e * 4
        shape_res = {}
        for mode in ("renormalize", "softmax"):
            r = measure(make_route(k, mode == "renormalize"), sets, nbytes)
            print(f"T={t} E={e} K={k} {mode}: {json.dumps(r)}", flush=True)
            shape_res[mode] = r
        res["shapes"][f"T{t}_E{e}_K{k}"] = shape_res
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
