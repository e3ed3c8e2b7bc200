#!/usr/bin/env python3
"""The hand-tuned set's table: `warpsmith eval --json` results of kernels/<problem>/kernel.cu (the
`kernels` and `sweep` stages of scripts/gpu_session.sh) beside the peers (bench/peers/*.py JSON).

Usage: kernel_table.py --run LABEL=DIR [--run ...] [--floors F.json ...] [--json OUT]
                       [--markdown OUT]
  DIR holds eval JSON (any *.json with "problem" and "cases") and peer JSON (*.peers.json) at any
  depth. A later --run's figures replace an earlier one's for the same kernel setting.

Per problem and parameter setting the row shows the evaluation whose knobs are today's defaults
(the first value of each knob in the kernel's plan); where no run used them, the latest one, marked.
A peer matches a bench shape when every number in its shape key is one of the shape's values
(bench/peers/*.py name shapes their own way); the best peer is the fastest protocol time among
every peer and mode of that shape and setting. ratio = best peer time / ours (above 1: ours wins).
--floors (bench/stream_floor.py run's JSON, best from the same call): the shape's memory floor,
a plain stream of its bytes in its read:write mix on the evaluator's protocol;
of floor = floor / ours.
Where a peer's shape entry counts the bytes the inputs really make a kernel read
(`distinct_weight_bytes`: moe_decode_fused's distinct experts, whose count the spec's bytes only
bound), the row gains "of copy, read": those bytes over the probed copy rate (the case's bytes
over its SOL time), over ours. It counts the peer's routing, exact where every routed expert is
distinct (one token); the evaluator draws its own.
"""
import argparse, glob, json, math, os, re, sys
from collections import Counter

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def default_knobs(problem):
    try:
        with open(os.path.join(ROOT, "kernels", problem, "kernel.cu")) as f:
            src = f.read()
        plan = json.loads(src.split("warpsmith:plan", 1)[1].split("*/", 1)[0])
        return {k: v[0] for k, v in plan.get("knobs", {}).items()}
    except (OSError, IndexError, ValueError):
        return None


def param_values(problem):
    """Every value of the problem's parameters (rceil, floor, ...), as strings."""
    try:
        with open(os.path.join(ROOT, "problems", problem, "spec.json")) as f:
            params = json.load(f).get("params", {})
    except (OSError, ValueError):
        return set()
    return {str(v) for prm in params.values() for v in prm["values"]}


def load(paths):
    evals, peers = {}, {}
    for label, d in paths:
        for path in sorted(glob.glob(os.path.join(d, "**", "*.json"), recursive=True)):
            try:
                with open(path) as f:
                    j = json.load(f)
            except (OSError, ValueError):
                continue  # a run cut short leaves empty files
            if path.endswith(".peers.json"):
                problem = os.path.basename(path)[:-len(".peers.json")]
                peers[problem] = dict(j, run=label)
            elif isinstance(j, dict) and "problem" in j and "cases" in j:
                hidden = any(c.get("kind") == "hidden" for c in j["cases"])
                key = (j["problem"], json.dumps(j.get("params", {}), sort_keys=True),
                       json.dumps(j.get("knobs", {}), sort_keys=True), hidden)
                evals.pop(key, None)  # keep the dict in run order: the latest last
                evals[key] = dict(j, run=label, file=os.path.relpath(path, d))
    return evals, peers


def peer_leaves(node, path=()):
    """(path, microseconds) for every protocol time in a peer shape entry."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k.endswith("protocol_us") and isinstance(v, (int, float)):
                yield path + ((k[:-len("protocol_us")].rstrip("_") or None),), float(v)
            else:
                yield from peer_leaves(v, path + (k,))


def shape_entries(peer_json, shape):
    """(key, entry) of the peer shape entries whose key's every number is one of the shape's
    values (bench/peers/*.py name shapes their own way)."""
    values = Counter(v for v in shape.values() if isinstance(v, int))
    for key, entry in peer_json.get("shapes", {}).items():
        nums = Counter(int(n) for n in re.findall(r"\d+", key))
        if nums and not nums - values:
            yield key, entry


def matching_peers(peer_json, shape, params, all_param_values):
    """{peer label: fastest protocol us} of the peer entries for this shape and setting
    (all_param_values: every value of the problem's parameters, to tell other settings' entries)."""
    param_values = set(str(v) for v in params.values())
    found = {}
    for key, entry in shape_entries(peer_json, shape):
        # A setting word in the key (form=wgrad) must be ours.
        words = set(re.findall(r"=([a-z]+)", key))
        if words - param_values:
            continue
        for path, us in peer_leaves(entry):
            named = [p for p in path if p]
            # A path element that names another setting of ours (rceil vs floor) is not ours.
            if any(p in all_param_values and p not in param_values for p in named):
                continue
            label = " ".join(p for p in named if p not in param_values and p != "default") or "peer"
            found[label] = min(us, found.get(label, us))
    return found


def matching_read_bytes(peer_json, shape):
    """The `distinct_weight_bytes` of this shape's peer entry (at any depth; the first), or None."""
    def find(node):
        if not isinstance(node, dict):
            return None
        v = node.get("distinct_weight_bytes")
        if isinstance(v, (int, float)):
            return float(v)
        return next((got for got in map(find, node.values()) if got is not None), None)

    return next((got for _, entry in shape_entries(peer_json, shape)
                 if (got := find(entry)) is not None), None)


def gemm_flops(shape):
    """2*M*N*K where the shape is a GEMM's (M, N, K and maybe E), else None."""
    if {"M", "N", "K"} <= set(shape) and set(shape) <= {"M", "N", "K", "E"}:
        return 2 * shape["M"] * shape["N"] * shape["K"]
    return None


def gemm_lines(rows):
    """The GEMM table: our TF/s beside every peer's, with the ratio to each."""
    lines = ["| problem | setting | shape | verdict | ours us | ours TF/s | of SOL | peers: TF/s "
             "(peer time / ours: above 1, ours wins) | run |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "tflops" not in r:
            continue
        flops = gemm_flops(r["shape"])
        peers = "; ".join(f"{k} {flops / us / 1e6:.0f} ({us / r['us']:.2f}x)"
                          for k, us in sorted(r.get("peers", {}).items()))
        setting = ",".join(f"{k}={v}" for k, v in r["params"].items())
        shape = " ".join(f"{k}{v}" for k, v in r["shape"].items())
        lines.append(f"| {r['problem']} | {setting} | {shape} | {r['case_verdict']} | "
                     f"{r['us']:.1f} | {r['tflops']:.0f} | {r.get('of_sol', 0):.2f} | {peers} | "
                     f"{r['run']} |")
    return lines


def table_lines(rows):
    """Every row: ours, its fraction of SOL (and of the shape's floor, where measured), the best
    peer and the ratio."""
    f = lambda x, d=1: "" if x is None else f"{x:.{d}f}"
    floors = any("floor_us" in r for r in rows)
    reads = any("of_copy_read" in r for r in rows)
    lines = ["| problem | setting | shape | verdict | ours us | of SOL | "
             + ("of copy, read | " if reads else "")
             + ("floor us | of floor | " if floors else "")
             + "best peer | peer us | ratio | run |",
             "|---|---|---|---|---|---|---|---|---|---|" + ("---|" if reads else "")
             + ("---|---|" if floors else "")]
    for r in rows:
        setting = ",".join(f"{k}={v}" for k, v in r["params"].items())
        shape = " ".join(f"{k}{v}" for k, v in (r["shape"] or {}).items())
        mark = "" if r["default_knobs"] else " (other knobs)"
        floor = f"{f(r.get('floor_us'))} | {f(r.get('of_floor'), 2)} | " if floors else ""
        read = f"{f(r.get('of_copy_read'), 2)} | " if reads else ""
        lines.append(f"| {r['problem']}{mark} | "
                     f"{setting} | {shape} | {r['case_verdict']} | {f(r['us'])} | "
                     f"{f(r.get('of_sol'), 2)} | {read}{floor}{r.get('peer', '')} | "
                     f"{f(r.get('peer_us'))} | {f(r.get('ratio'), 2)} | {r['run']} |")
    return lines


def floor_key(problem, shape, params):
    return (problem, tuple(sorted((shape or {}).items())), json.dumps(params, sort_keys=True))


def load_floors(paths):
    """floor_key -> the floor row of bench/stream_floor.py's JSON (params {}: every setting)."""
    out = {}
    for path in paths:
        with open(path) as f:
            for row in json.load(f).get("floors", []):
                out[floor_key(row["problem"], row["shape"], row.get("params", {}))] = row
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", action="append", default=[], required=True)
    ap.add_argument("--floors", action="append", default=[],
                    help="bench/stream_floor.py run's JSON: each shape's memory floor")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--gemm", action="store_true", help="the GEMM table (TF/s, every peer)")
    a = ap.parse_args()
    runs = [r.split("=", 1) for r in a.run]
    evals, peers = load(runs)
    floors = load_floors(a.floors)
    chosen = {}
    # Per setting: today's default knobs first, then an evaluation with hidden shapes (the
    # complete verdict), then the latest.
    for (problem, params, knobs, hidden), j in evals.items():
        defaults = default_knobs(problem)
        # A knob the evaluation does not list was added after it ran, at its first value.
        is_default = defaults is not None and all(
            j.get("knobs", {}).get(k, v) == v for k, v in defaults.items())
        rank = (is_default, hidden)
        cur = chosen.get((problem, params))
        if cur is None or rank >= cur[1]:
            chosen[(problem, params)] = (j, rank)
    rows = []
    for (problem, params), (j, (is_default, _)) in sorted(chosen.items()):
        p = json.loads(params)
        all_values = param_values(problem)
        for c in j["cases"]:
            if c.get("kind") != "bench":
                continue
            us = c.get("timing", {}).get("median_us")
            row = {"problem": problem, "params": p, "shape": c.get("shape"), "verdict": j["verdict"],
                   "case_verdict": c.get("verdict"), "us": us, "sol_us": c.get("sol_us"),
                   "knobs": j.get("knobs"), "default_knobs": is_default, "run": j["run"]}
            if us and c.get("sol_us"):
                row["of_sol"] = c["sol_us"] / us
            found = matching_peers(peers.get(problem, {}), c.get("shape") or {}, p,
                                   all_values)
            if found and us:
                label = min(found, key=found.get)
                row.update(peers=found, peer=label, peer_us=found[label],
                           peer_run=peers[problem]["run"], ratio=found[label] / us)
            read = matching_read_bytes(peers.get(problem, {}), c.get("shape") or {})
            if read and us and c.get("sol_us") and c.get("bytes"):
                row.update(read_bytes=read,
                           of_copy_read=read * c["sol_us"] / (c["bytes"] * us))
            floor = (floors.get(floor_key(problem, c.get("shape"), p))
                     or floors.get(floor_key(problem, c.get("shape"), {})))
            if floor and us:
                row.update(floor_us=floor["stream_us"], floor_copy_us=floor["copy_us"],
                           of_floor=floor["stream_us"] / us)
            flops = gemm_flops(c.get("shape") or {})
            if flops and us:
                row["tflops"] = flops / us / 1e6
            rows.append(row)
    sweeps = [{"problem": k[0], "params": json.loads(k[1]), "knobs": j.get("knobs"),
               "verdict": j["verdict"], "geomean_us": j.get("geomean_us"), "run": j["run"],
               "hidden": k[3]}
              for k, j in sorted(evals.items())]
    out = {"runs": dict(runs), "rows": rows, "evaluations": sweeps}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    lines = gemm_lines(rows) if a.gemm else table_lines(rows)
    text = "\n".join(lines) + "\n"
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
