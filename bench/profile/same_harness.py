#!/usr/bin/env python3
"""Our kernel timed by the peers' own harness: the candidate job an evaluation kept
(`warpsmith eval --keep-scratch --json`) is launched from Python through the driver API, with the
same protocol_time_us (bench/peers/common.py) and the same process, stream and input rotation as
the Triton peers, so the two sides differ in nothing but their kernels.

Usage: same_harness.py OUT.json EVAL.json [EVAL.json ...]
  Every timed bench case of each evaluation: our median under the peers' protocol (timed before
  and after the peer, to show drift); for mxfp8_quantize_rowwise also the Triton peer
  (bench/peers/mxfp8_quantize_rowwise.py, best of its BLOCKS) at that shape, in the evaluation's
  rounding mode. Launches with TMA tensor maps or clusters are not supported (the case is skipped
  and says so). Not a verdict: inputs are plain random data (so only for kernels whose inputs
  are values, not indices or offsets), nothing is checked.
"""
import ctypes, json, os, sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "peers"))
from common import protocol_time_us  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32,
          "i32": torch.int32, "i64": torch.int64, "fp8_e4m3": torch.uint8,
          "fp8_e5m2": torch.uint8, "e8m0": torch.uint8, "u8": torch.uint8}

_cuda = None


def driver():
    global _cuda
    if _cuda is None:
        _cuda = ctypes.CDLL("libcuda.so.1")
    return _cuda


def check(rc, what):
    if rc != 0:
        raise RuntimeError(f"{what}: CUresult {rc}")


class Module:
    """The job's cubin in torch's (primary) context, its functions by name."""

    def __init__(self, path):
        torch.zeros(1, device="cuda")  # torch's primary context exists and is current
        self.data = open(path, "rb").read()
        self.handle = ctypes.c_void_p()
        check(driver().cuModuleLoadData(ctypes.byref(self.handle), self.data), "cuModuleLoadData")
        self.funcs = {}

    def function(self, name, smem):
        f = self.funcs.get(name)
        if f is None:
            f = ctypes.c_void_p()
            check(driver().cuModuleGetFunction(ctypes.byref(f), self.handle, name.encode()),
                  f"cuModuleGetFunction {name}")
            self.funcs[name] = f
        # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
        check(driver().cuFuncSetAttribute(f, 8, ctypes.c_int(smem)), "cuFuncSetAttribute")
        return f


def unsupported(case):
    for l in case["launches"]:
        if any("tensor_map" in a for a in l["args"]):
            return "a TMA tensor map argument"
        if l.get("cluster", [1, 1, 1]) != [1, 1, 1]:
            return "a cluster launch"
    return None


def make_tensors(job_tensors, sets=2):
    """Two input sets (random, by dtype) and one buffer per output."""
    inputs, outputs = [{} for _ in range(sets)], {}
    for t in job_tensors:
        dt = DTYPES[t["dtype"]]
        if t["role"] == "input":
            for si, s in enumerate(inputs):
                if dt.is_floating_point:  # as the peers: a unit normal, then one 32x wider
                    s[t["name"]] = torch.randn(t["numel"], device="cuda", dtype=dt) * 2.0 ** (5 * si)
                else:
                    s[t["name"]] = torch.randint(0, 127, (t["numel"],), device="cuda").to(dt)
        else:
            outputs[t["name"]] = torch.empty(t["numel"], dtype=dt, device="cuda")
    return inputs, outputs


def launcher(module, case, inputs, outputs, workspace):
    """fn(i): the case's launches on input set i % len(inputs), on torch's current stream."""
    prepared = []
    for l in case["launches"]:
        f = module.function(l["kernel"], int(l.get("smem", 0)))
        prepared.append((f, l))

    def fn(i):
        tensors = dict(inputs[i % len(inputs)], **outputs)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        if workspace is not None and case.get("workspace", {}).get("zero"):
            workspace.zero_()
        for f, l in prepared:
            holders = []
            for a in l["args"]:
                if "tensor" in a:
                    holders.append(ctypes.c_uint64(tensors[a["tensor"]].data_ptr()))
                elif a.get("workspace"):
                    holders.append(ctypes.c_uint64(workspace.data_ptr()))
                elif "i32" in a:
                    holders.append(ctypes.c_int32(a["i32"]))
                elif "i64" in a:
                    holders.append(ctypes.c_int64(a["i64"]))
                else:
                    raise ValueError(f"argument {a} is not supported")
            params = (ctypes.c_void_p * len(holders))(
                *[ctypes.cast(ctypes.pointer(h), ctypes.c_void_p) for h in holders])
            g, b = l["grid"], l["block"]
            check(driver().cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2],
                                          int(l.get("smem", 0)), stream, params, None),
                  f"cuLaunchKernel {l['kernel']}")

    return fn


def triton_rowwise(case, ev):
    """The Triton peer at this case's shape, in the evaluation's rounding mode (protocol us)."""
    import mxfp8_quantize_rowwise as peer  # bench/peers/
    os.environ["PEERS_NO_COMPILE"] = "1"
    shape = case.get("shape") or {}
    m, k = shape["M"], shape["K"]
    xs = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) * (2.0 ** i) for i in (0, 5)]
    q = torch.empty(m, k, dtype=torch.float8_e4m3fn, device="cuda")
    s = torch.empty(m * k // 32, dtype=torch.uint8, device="cuda")
    rceil = ev.get("params", {}).get("rounding", "rceil") == "rceil"
    r = peer.measure_mode(m, k, xs, q, s, rceil)
    return r["triton_protocol_us"], r["triton_BLOCKS"]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "evaluations": []}
    for path in sys.argv[2:]:
        ev = json.load(open(path))
        scratch = ev.get("kept_scratch")
        entry = {"eval": os.path.basename(path), "problem": ev.get("problem"),
                 "params": ev.get("params"), "knobs": ev.get("knobs"), "cases": []}
        out["evaluations"].append(entry)
        if not scratch:
            entry["error"] = "no kept scratch (run eval with --keep-scratch)"
            continue
        job = json.load(open(os.path.join(scratch, "candidate.job.json")))
        module = Module(job["cubin"])
        # A job case "<kind>-<i>" is the evaluation's i-th case.
        ev_cases = ev.get("cases", [])
        for case in job["cases"]:
            if not case["id"].startswith("bench-") or not case.get("timing"):
                continue
            i = int(case["id"].rsplit("-", 1)[1])
            row = {"id": case["id"], "shape": ev_cases[i].get("shape") if i < len(ev_cases) else None}
            why = unsupported(case)
            if why:
                row["skipped"] = why
                entry["cases"].append(row)
                continue
            inputs, outputs = make_tensors(case["tensors"])
            ws_bytes = case.get("workspace", {}).get("bytes", 0)
            workspace = torch.zeros(ws_bytes, dtype=torch.uint8, device="cuda") if ws_bytes else None
            fn = launcher(module, case, inputs, outputs, workspace)
            row["ours_us"] = protocol_time_us(fn, list(outputs.values()))
            if ev.get("problem") == "mxfp8_quantize_rowwise" and row["shape"]:
                case_for_peer = dict(case, shape=row["shape"])
                row["triton_us"], row["triton_BLOCKS"] = triton_rowwise(case_for_peer, ev)
                row["ours_again_us"] = protocol_time_us(fn, list(outputs.values()))
            del inputs, outputs, workspace
            torch.cuda.empty_cache()
            print(json.dumps(row), flush=True)
            entry["cases"].append(row)
    json.dump(out, open(sys.argv[1], "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
