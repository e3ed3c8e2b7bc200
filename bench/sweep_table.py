#!/usr/bin/env python3
"""Knob sweeps side by side: the `warpsmith eval --json` results of the `sweep` and `queue` stages of
scripts/gpu_session.sh, each variant against the default knobs of the same problem and setting in the
same run. The stage times the control before a setting's variants and again after them (`_again`):
each variant is held to the mean of those medians, and the two control rows show their drift (an
entry's first evaluation can run cold, a few percent slow). Where a run holds several sweeps of one
problem and setting (two queue entries), each variant is held to the controls of its own sweep (its
archive or folder).

Usage: sweep_table.py DIR [--json OUT] [--gpu-csv FILE] [--command TEXT]
  DIR holds eval JSON (any *.json with "problem" and "cases", at any depth; .tgz files are read too).

Per variant and bench shape: the median, its fraction of speed-of-light, and control / variant
(above 1: the variant is faster). The geomean of those ratios ranks the variants of a setting.
A variant whose verdict is not ok shows its verdict and message instead. A variant measured in
several sweeps of the run (a queue entry repeated, for a noisy shape) also gets one line over all
of them: per shape the geomean of its ratios and their range, and beside it the controls' spread
(slowest over fastest median), the noise the ratios sit in.
"""
import argparse, datetime, glob, io, json, math, os, sys, tarfile
from collections import defaultdict


def load_results(root):
    """Every eval result under root (plain files and members of .tgz archives)."""
    out, seen = [], set()

    def take(name, text):
        try:
            j = json.loads(text)
        except ValueError:
            return
        if isinstance(j, dict) and "problem" in j and "cases" in j:
            # An archive and its extracted copy hold the same evaluation: the same content. Not
            # the id alone: each GPU call starts a fresh store, whose ids restart at 1.
            key = json.dumps(j, sort_keys=True)
            if key not in seen:
                seen.add(key)
                j["_file"] = name
                out.append(j)

    for path in sorted(glob.glob(os.path.join(root, "**", "*"), recursive=True)):
        if path.endswith(".json"):
            with open(path) as f:
                take(path, f.read())
        elif path.endswith(".tgz"):
            with tarfile.open(path) as t:
                for m in t.getmembers():
                    if m.isfile() and m.name.endswith(".json"):
                        take(f"{path}:{m.name}", t.extractfile(m).read().decode())
    return out


def shape_key(case):
    s = case.get("shape") or {}
    return " ".join(f"{k}{v}" for k, v in sorted(s.items())) if isinstance(s, dict) else str(s)


def bench_times(r):
    """{shape: (median_us, of_sol)} of the timed bench cases."""
    t = {}
    for c in r.get("cases", []):
        tm = c.get("timing")
        if c.get("kind") == "bench" and tm and tm.get("median_us"):
            sol = c.get("sol_us") or 0
            t[shape_key(c)] = (tm["median_us"], sol / tm["median_us"] if sol else None)
    return t


def is_control(r):
    return is_repeat(r) or os.path.basename(r["_file"].split(":")[-1]).endswith("_.json")


def is_repeat(r):
    """The control timed again after its sweep's variants."""
    return os.path.basename(r["_file"].split(":")[-1]).endswith("_again.json")


def control_times(controls):
    """Over the ok controls of one sweep: ({shape: mean median_us}, {shape: slowest / fastest
    median} where the control was timed more than once)."""
    per = defaultdict(list)
    for c in controls:
        if c.get("verdict") == "ok":
            for s, (m, _) in bench_times(c).items():
                per[s].append(m)
    means = {s: sum(ms) / len(ms) for s, ms in per.items()}
    drift = {s: round(max(ms) / min(ms), 4) for s, ms in per.items() if len(ms) > 1}
    return means, drift


def batch(r):
    """The sweep a result belongs to: its .tgz archive, or else its folder."""
    f = r["_file"]
    return f.split(":")[0] if ":" in f else os.path.dirname(f)


def setting_text(r):
    p = r.get("params") or {}
    return "+".join(f"{k}={v}" for k, v in sorted(p.items())) or "-"


def variant_text(r, control):
    # A variant of another kernel file (sweep variant @file=PATH) is named by that file first.
    f = f"file={os.path.basename(r['kernel_file'])}" if r.get("kernel_file") else ""
    if control is None:
        knobs = " ".join(f"{k}={v}" for k, v in sorted((r.get("knobs") or {}).items()))
        return " ".join(x for x in (f, knobs) if x)
    ck = control.get("knobs") or {}
    diff = {k: v for k, v in (r.get("knobs") or {}).items() if ck.get(k) != v}
    return " ".join(x for x in (f, *(f"{k}={v}" for k, v in sorted(diff.items()))) if x) or \
        "default"


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


def repeats(rows, sweeps):
    """Variants measured in more than one sweep (sweeps[i]: row i's): their ratios over all of
    them, beside the controls' spread per shape."""
    by = defaultdict(list)
    for row, sweep in zip(rows, sweeps):
        if row["knobs"] != "default" and row["verdict"] == "ok":
            by[row["knobs"]].append((row, sweep))
    controls = [row for row in rows if row["knobs"].startswith("default")]
    out = []
    for knobs, pairs in sorted(by.items()):
        if len({sweep for _, sweep in pairs}) < 2:
            continue
        rs = [row for row, _ in pairs]
        bench = {}
        for shape in sorted({s for r in rs for s in r["bench"]}):
            xs = [r["bench"][shape]["control_over_this"] for r in rs
                  if shape in r["bench"] and r["bench"][shape]["control_over_this"]]
            if xs:
                bench[shape] = {"geomean": round(geomean(xs), 4), "min": min(xs), "max": max(xs)}
        spread = {}
        for shape in bench:
            ms = [c["bench"][shape]["median_us"] for c in controls if shape in c["bench"]]
            if len(ms) > 1:
                spread[shape] = round(max(ms) / min(ms), 4)
        out.append({"knobs": knobs, "sweeps": len(rs), "bench": bench, "control_spread": spread,
                    "geomean": round(geomean([b["geomean"] for b in bench.values()]), 4)
                    if bench else None})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--json", help="write the table as JSON here")
    ap.add_argument("--gpu-csv", help="nvidia-smi CSV of the run (name, driver, ...)")
    ap.add_argument("--command", default="", help="the command that produced DIR, for the record")
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    ap.add_argument("--date", default=today,
                    help="the run's date (YYYY-MM-DD; default today, UTC), for the record")
    a = ap.parse_args()

    results = load_results(a.dir)
    if not results:
        sys.exit(f"sweep_table: no eval results under {a.dir}")
    groups = defaultdict(list)
    for r in results:
        groups[(r["problem"], setting_text(r))].append(r)

    table = []
    for (problem, setting), rs in sorted(groups.items()):
        controls = [r for r in rs if is_control(r)]
        own = defaultdict(list)  # each sweep's controls, the first one first
        for c in sorted(controls, key=lambda c: (is_repeat(c), c["_file"])):
            own[batch(c)].append(c)
        drift = {}
        rows, sweeps = [], []  # sweeps[i]: the sweep rows[i] came from
        for r in sorted(rs, key=lambda r: (not is_control(r), is_repeat(r), r["_file"])):
            ctls = own.get(batch(r)) or controls[:1]
            ct, ctl_drift = control_times(ctls)
            for s, d in ctl_drift.items():
                drift[s] = max(drift.get(s, 1.0), d)
            t = bench_times(r)
            ratios = [ct[s] / t[s][0] for s in t if s in ct]
            knobs = variant_text(r, ctls[0] if ctls else None)
            row = {"knobs": knobs + " (again)" if is_repeat(r) else knobs,
                   "verdict": r.get("verdict"),
                   "bench": {s: {"median_us": round(m, 3), "of_sol": round(f, 4) if f else None,
                                 "control_over_this": round(ct[s] / m, 4) if s in ct else None}
                             for s, (m, f) in t.items()},
                   "geomean_control_over_this":
                       round(geomean(ratios), 4) if ratios else None}
            if r.get("verdict") != "ok":
                row["message"] = str(r.get("message", ""))[:300]
            rows.append(row)
            sweeps.append(batch(r))
        rep_rows = repeats(rows, sweeps)
        entry = {"problem": problem, "setting": setting, "control_found": bool(controls),
                 "control_drift": drift, "variants": rows}
        if rep_rows:
            entry["repeated"] = rep_rows
        table.append(entry)
        print(f"== {problem} [{setting}]" + ("" if controls else " (no control in this run)"))
        shapes = sorted({s for row in rows for s in row["bench"]})
        print(f"  {'variant':<40} " + "  ".join(shapes) + "  (median us, x control/variant)")
        for row in rows:
            if row["verdict"] != "ok":
                print(f"  {row['knobs']:<40} {row['verdict']}: {row.get('message', '')[:120]}")
                continue
            cells = []
            for s in shapes:
                b = row["bench"].get(s)
                if not b:
                    cells.append("-")
                    continue
                ratio = f" x{b['control_over_this']:.3f}" if b["control_over_this"] else ""
                cells.append(f"{b['median_us']:.2f}{ratio}")
            g = row["geomean_control_over_this"]
            print(f"  {row['knobs']:<40} {'  '.join(cells)}" + (f"  | geomean x{g:.3f}" if g else ""))
        if drift:
            print(f"  {'controls: slowest / fastest':<40} "
                  + "  ".join(f"x{drift[s]:.3f}" if s in drift else "-" for s in shapes))
        for rr in rep_rows:
            cells = []
            for s in shapes:
                b = rr["bench"].get(s)
                sp = rr["control_spread"].get(s)
                cells.append(f"x{b['geomean']:.3f} [{b['min']:.3f}-{b['max']:.3f}]"
                             + (f" ctl {sp:.3f}" if sp else "") if b else "-")
            g = rr["geomean"]
            label = f"{rr['knobs']} over {rr['sweeps']} sweeps"
            print(f"  {label:<40} {'  '.join(cells)}" + (f"  | geomean x{g:.3f}" if g else ""))

    if a.json:
        meta = {"command": a.command, "date": a.date,
                "method": "warpsmith eval --json per variant (the evaluator's "
                "timing protocol); control_over_this = the default knobs' median in the same run "
                "(the mean of the control timed before and after the variants) over the "
                "variant's (above 1: the variant is faster); control_drift = the slowest control "
                "median over the fastest"}
        if a.gpu_csv and os.path.exists(a.gpu_csv):
            with open(a.gpu_csv) as f:
                lines = [l.strip() for l in f if l.strip()]
            if len(lines) >= 2:
                vals = [v.strip() for v in lines[1].split(",")]
                meta.update({"gpu": vals[0], "driver": vals[1] if len(vals) > 1 else None})
        meta["devices_in_results"] = sorted({str((r.get("device") or {}).get("name")) for r in results})
        with open(a.json, "w") as f:
            json.dump({**meta, "sweeps": table}, f, indent=1)


if __name__ == "__main__":
    main()
