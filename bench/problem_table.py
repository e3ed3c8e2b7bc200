#!/usr/bin/env python3
"""Builds the problem-set table (per problem, params and bench shape: speed-of-light time, the
baseline's and the starting kernel's time and fraction of speed-of-light) from `warpsmith eval
--json` outputs named <problem>[__<name>-<value>...].<baseline|starting>.json, plus the `problems
verify` logs named <problem>[__<name>-<value>...].verify.log.

A setting with a verify log but no evaluation is listed as not run. --meta KEY=VALUE (repeatable)
records the run's facts (GPU, driver, date, command) at the top of the JSON.

Usage: problem_table.py DIR [--json OUT.json] [--markdown OUT.md] [--meta KEY=VALUE ...]"""
import argparse
import glob
import json
import os


def load(path):
    if not os.path.exists(path):
        return {"verdict": "not run", "message": "", "cases": []}
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return {"verdict": "missing", "message": str(e), "cases": []}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    rows, summary = [], []
    keys = sorted({os.path.basename(p).rsplit(".", 2)[0]
                   for pattern in ("*.json", "*.verify.log")
                   for p in glob.glob(os.path.join(args.dir, pattern))})
    for key in keys:
        # <problem>[__<name>-<value>[__<name>-<value>...]]: only plain characters travel back.
        problem, _, rest = key.partition("__")
        params = ",".join(kv.replace("-", "=", 1) for kv in rest.split("__")) if rest else ""
        base = load(os.path.join(args.dir, key + ".baseline.json"))
        start = load(os.path.join(args.dir, key + ".starting.json"))
        vlog = os.path.join(args.dir, key + ".verify.log")
        verify = open(vlog).read().strip().splitlines()[-1] if os.path.exists(vlog) else "not run"
        summary.append({"problem": problem, "params": params, "verify": verify,
                        "baseline": base.get("verdict"), "starting": start.get("verdict"),
                        "baseline_message": base.get("message", "")[:300],
                        "starting_message": start.get("message", "")[:300]})
        timed = {}
        for name, res in (("baseline", base), ("starting", start)):
            for c in res.get("cases", []):
                if c.get("kind") != "bench":
                    continue
                shape = json.dumps(c.get("shape", {}), sort_keys=True)
                row = timed.setdefault(shape, {"problem": problem, "params": params,
                                               "shape": c.get("shape"), "sol_us": c.get("sol_us")})
                t = c.get("timing", {}).get("median_us")
                row[name + "_us"] = t
                row[name + "_of_sol"] = (c["sol_us"] / t) if t and c.get("sol_us") else None
        rows.extend(timed.values())
    out = {"problems": summary, "bench": rows}
    if args.meta:
        out = {**dict(m.split("=", 1) for m in args.meta), **out}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    lines = ["| problem | params | shape | SOL us | baseline us | of SOL | starting us | of SOL |",
             "|---|---|---|---|---|---|---|---|"]
    fmt = lambda v, p=".1f": "-" if v is None else format(v, p)
    for r in rows:
        shape = " ".join(f"{k}={v}" for k, v in (r["shape"] or {}).items())
        lines.append(f"| {r['problem']} | {r['params']} | {shape} | {fmt(r['sol_us'])} | "
                     f"{fmt(r.get('baseline_us'))} | {fmt(r.get('baseline_of_sol'), '.3f')} | "
                     f"{fmt(r.get('starting_us'))} | {fmt(r.get('starting_of_sol'), '.3f')} |")
    lines += ["", "| problem | params | verify | baseline | starting |", "|---|---|---|---|---|"]
    for s in summary:
        lines.append(f"| {s['problem']} | {s['params']} | {s['verify']} | {s['baseline']} | "
                     f"{s['starting']} |")
    text = "\n".join(lines) + "\n"
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
