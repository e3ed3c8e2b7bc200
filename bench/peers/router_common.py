# Shared timing for the router peers (router_topk_softmax.py, router_topk_sigmoid_grouped.py): the
# torch composition a model uses, eager and torch.compile, timed two ways in this process:
#   "protocol": warpsmith's own method (CUDA events around the call only; before every timed call
#               the outputs are overwritten and the L2 is flushed by reading 4x its size; input
#               sets rotated; median);
#   "do_bench": triton.testing.do_bench, median.
# The peers are timed, not checked: torch.topk breaks ties its own way.
import os

import torch
from triton.testing import do_bench

from common import protocol_time_us


def measure(route, input_sets, nbytes):
    """route(*inputs) -> (idx, w, counts). Eager and torch.compile, protocol and do_bench."""
    res = {}
    variants = [("eager", route)]
    if not os.environ.get("PEERS_NO_COMPILE"):  # torch.compile costs minutes of compiling
        variants.append(("torch_compile", torch.compile(route)))
    for name, fn in variants:
        try:
            outs = fn(*input_sets[0])
            torch.cuda.synchronize()
            us = protocol_time_us(lambda i: fn(*input_sets[i % len(input_sets)]), list(outs))
            counter = [0]

            def step():
                counter[0] += 1
                fn(*input_sets[counter[0] % len(input_sets)])

            db_us = do_bench(step, warmup=25, rep=200, return_mode="median") * 1e3
            res[name] = {"protocol_us": us, "do_bench_us": db_us, "protocol_TBps": nbytes / us / 1e6}
        except Exception as ex:  # keep the other variants' figures
            res[name] = {"error": repr(ex)[:500]}
    return res
