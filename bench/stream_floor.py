#!/usr/bin/env python3
"""The memory floor of every bench shape of the memory-bound problems: the bytes a kernel must
read (its inputs) and write (its outputs), streamed by a plain kernel in that mix and timed on
the evaluator's protocol (bench/profile/stream_floor.cu, built with this machine's nvcc).

Usage:
  stream_floor.py patterns [PROBLEM ...]    the binary's input lines: LABEL READ_BYTES WRITE_BYTES
  stream_floor.py run OUT.json [PROBLEM ...] [--nvcc NVCC] [--arch sm_90a]
                                            build, run, write JSON (problem, shape, bytes, times)
PROBLEM defaults to every problem whose spec counts no FLOPs (bench/kernel_table.py --floors
joins the JSON to our times: of_floor = floor time / ours).

The probe's copy rate (the speed-of-light fractions' denominator) is a 1:1 mix at 2-3 GiB; a
shape moving 140 MB, or writing twice what it reads, does not reach it even as a plain copy
(bench/results/bandwidth-mix-*). The floor here is that shape's own plain stream.
"""
import argparse, glob, json, os, re, subprocess, sys, tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DTYPE_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "i32": 4, "i64": 8, "fp8_e4m3": 1, "fp8_e5m2": 1,
               "e8m0": 1, "u8": 1}


def ceil_div(a, b):
    return -(-a // b)


def round_up(a, b):
    return ceil_div(a, b) * b


def shape_value(expr, symbols, params):
    """An integer shape expression of a spec (problems/expr.cc's language: + - * / %, comparisons,
    min, max, ceil_div, round_up, pow2, log2_floor; / divides integers)."""
    py = re.sub(r"(?<![/])/(?![/])", "//", str(expr))
    env = {"ceil_div": ceil_div, "round_up": round_up, "min": min, "max": max,
           "pow2": lambda a: 1 << a, "log2_floor": lambda a: a.bit_length() - 1}
    env.update(symbols)
    env.update(params)
    return int(eval(py, {"__builtins__": {}}, env))  # noqa: S307 (the repository's own specs)


def param_env(spec, params):
    """Parameter values as the expression language sees them: a string value is its index."""
    env = {}
    for name, p in spec.get("params", {}).items():
        values = p["values"]
        v = params.get(name, p.get("default", values[0]))
        env[name] = values.index(v) if v in values else v
    return env


def tensor_bytes(spec, shape, params=None):
    """(read, written): the bytes of the spec's inputs and of its outputs at one shape."""
    env = param_env(spec, params or {})
    read = written = 0
    for t in spec["tensors"]:
        n = DTYPE_BYTES[t["dtype"]]
        for d in t["shape"]:
            n *= shape_value(d, shape, env)
        if t["role"] == "input":
            read += n
        else:
            written += n
    return read, written


def memory_bound(spec):
    return not spec.get("cost", {}).get("flops")


def specs(names):
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "problems", "*", "spec.json"))):
        with open(path) as f:
            s = json.load(f)
        if (names and s["name"] in names) or (not names and memory_bound(s)):
            out.append(s)
    missing = set(names or []) - {s["name"] for s in out}
    if missing:
        sys.exit(f"stream_floor: no such problem: {', '.join(sorted(missing))}")
    return out


def bench_symbols(shape):
    return {k: v for k, v in shape.items() if isinstance(v, int)}


def settings(spec):
    """Every parameter setting of a spec, as {name: value} (one empty setting without params)."""
    out = [{}]
    for name, p in sorted(spec.get("params", {}).items()):
        out = [dict(o, **{name: v}) for o in out for v in p["values"]]
    return out


def setting_bytes(spec, sym, params):
    """(read, written) at one shape and setting. Every output byte is written; the reads are
    the spec's bytes less those where the spec counts fewer than the inputs hold (the combine
    reads only the permuted rows that hold tokens, not the padding; without a shared expert it
    reads no shared tensor)."""
    read, written = tensor_bytes(spec, sym, params)
    cost = spec.get("cost", {}).get("bytes")
    if cost:
        total = shape_value(cost, sym, param_env(spec, params))
        if written < total < read + written:
            read = total - written
    return read, written


def patterns(names):
    """One pattern per (problem, bench shape), or per parameter setting where the bytes depend
    on it: label, problem, shape, params ({} when the bytes are the same in every setting),
    read bytes, written bytes."""
    rows = []
    for s in specs(names):
        for shape in s.get("shapes", {}).get("bench", []):
            sym = bench_symbols(shape)
            by_setting = [(p, setting_bytes(s, sym, p)) for p in settings(s)]
            if len({b for _, b in by_setting}) == 1:
                by_setting = [({}, by_setting[0][1])]
            for params, (read, written) in by_setting:
                label = s["name"] + ":" + ",".join(f"{k}={v}" for k, v in sorted(sym.items()))
                if params:
                    label += ":" + ",".join(f"{k}={v}" for k, v in sorted(params.items()))
                rows.append({"label": label, "problem": s["name"], "shape": sym,
                             "params": params, "read_bytes": read, "write_bytes": written})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["patterns", "run"])
    ap.add_argument("rest", nargs="*")
    ap.add_argument("--nvcc", default="nvcc")
    ap.add_argument("--arch", default="sm_90a")
    a = ap.parse_args()
    if a.command == "patterns":
        for p in patterns(a.rest):
            print(p["label"], p["read_bytes"], p["write_bytes"])
        return
    if not a.rest:
        sys.exit("stream_floor: run needs OUT.json")
    out, names = a.rest[0], a.rest[1:]
    rows = patterns(names)
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "stream_floor")
        try:
            subprocess.run([a.nvcc, "-O3", f"-arch={a.arch}",
                            os.path.join(ROOT, "bench", "profile", "stream_floor.cu"), "-o", exe],
                           check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            sys.exit(f"stream_floor: building with {a.nvcc} failed: {e}")
        lines = "".join(f"{p['label']} {p['read_bytes']} {p['write_bytes']}\n" for p in rows)
        res = subprocess.run([exe], input=lines, capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"stream_floor: the binary failed ({res.returncode}): {res.stderr.strip()}")
    measured = json.loads(res.stdout)
    by_label = {p["label"]: p for p in measured["patterns"]}
    for p in rows:
        m = by_label[p["label"]]
        p.update(stream_us=m["stream_us"], copy_us=m["copy_us"], a=m["a"], b=m["b"])
    doc = {k: v for k, v in measured.items() if k != "patterns"}
    doc["floors"] = rows
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    for p in rows:
        print(f"{p['label']}: read {p['read_bytes'] / 1e6:.1f} MB, write "
              f"{p['write_bytes'] / 1e6:.1f} MB: stream {p['stream_us']:.1f} us, "
              f"copy {p['copy_us']:.1f} us")


if __name__ == "__main__":
    main()
