# Peers for router_topk_sigmoid_grouped on the GPU at hand: DeepSeek-V3's noaux_tc selection as its
# model code writes it in torch (sigmoid, biased scores, top-2 group sums, group top-k, masked
# expert top-k, gather of the unbiased weights, normalize, scale; bincount for the counts), eager
# and torch.compile, at the problem's bench shapes; timing in router_common.py.
# Usage: python3 router_topk_sigmoid_grouped.py OUT.json

import json, os, sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from router_common import measure  # noqa: E402
from spec_shapes import bench_shapes

# (T, E, K, NG, TG, scale); the spec gives the scale in thousandths.
SHAPES = [(t, e, k, ng, tg, milli / 1000) for t, e, k, ng, tg, milli in
          bench_shapes("router_topk_sigmoid_grouped", "T", "E", "K", "NG", "TG", "SCALE_MILLI")]


def make_route(k, ng, tg, scale):
    def route(logits, bias):
        t, e = logits.shape
        s = logits.sigmoid()
        b = s + bias
        if ng > 1:
            gs = b.view(t, ng, -1).topk(2, dim=-1)[0].sum(dim=-1)
            gidx = gs.topk(tg, dim=-1, sorted=False)[1]
            gmask = torch.zeros_like(gs).scatter_(1, gidx, 1)
            emask = gmask.unsqueeze(-1).expand(t, ng, e // ng).reshape(t, e)
            b = b.masked_fill(~emask.bool(), float("-inf"))
        idx = b.topk(k, dim=-1)[1]
        w = s.gather(1, idx)
        w = w / w.sum(dim=-1, keepdim=True) * scale
        counts = torch.bincount(idx.flatten(), minlength=e).to(torch.int32)
        return idx.to(torch.int32), w, counts
    return route


def main():
    out_path = sys.argv[1]
    props = torch.cuda.get_device_properties(0)
    res = {"gpu": props.name, "torch": torch.__version__, "triton": triton.__version__, "shapes": {}}
    for t, e, k, ng, tg, scale in SHAPES:
        bias = (torch.rand(e, device="cuda") - 0.5) * 0.5
        sets = [(torch.randn(t, e, device="cuda") * 2.0, bias) for _ in range(2)]
        nbytes = t * e * 4 + e * 4 + t * k * 8 + e * 4
        r = measure(make_route(k, ng, tg, scale), sets, nbytes)
        print(f"T={t} E={e} K={k} NG={ng} TG={tg}: {json.dumps(r)}", flush=True)
        res["shapes"][f"T{t}_E{e}_K{k}_NG{ng}_TG{tg}"] = {"default": r}
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
