#!/usr/bin/env python3
"""Tests of bench/sweep_table.py on a synthetic sweep: the control is the file gpu_session.sh names
<problem><setting>_.json (and _again.json, the control timed after the variants), variants show
only the knobs they change (a variant of another kernel file, its file first), the ratio's
direction, an archive and its extracted copy count once, a
failed variant shows its verdict, and where one run holds two sweeps of the same problem each
variant is held to its own sweep's controls, and a variant repeated over sweeps gets one line over
all of them. Exit 1 on a failure."""
import io, json, os, subprocess, sys, tarfile, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def result(eid, knobs, us, verdict="ok"):
    return {"problem": "p", "params": {"rounding": "rceil"}, "knobs": knobs, "verdict": verdict,
            "evaluation_id": eid, "message": "boom" if verdict != "ok" else "",
            "cases": [{"kind": "test", "shape": {"M": 8}},
                      {"kind": "bench", "shape": {"M": 64, "K": 32}, "sol_us": 50.0,
                       "timing": {"median_us": us}}] if verdict == "ok" else []}


def queue_entries(root, scratch, entries):
    """One queue archive per entry under root: its control (X=1 Y=2) and one variant, each
    entry (control_us, file name suffix, variant knobs, variant_us)."""
    os.makedirs(root, exist_ok=True)
    for n, (control_us, name, knobs, us) in enumerate(entries):
        d = os.path.join(scratch, f"{os.path.basename(root)}{n}")
        os.makedirs(d)
        for fname, obj in {"prounding-rceil_.json": result(f"c{n}", {"X": 1, "Y": 2}, control_us),
                           f"prounding-rceil_{name}.json": result(f"v{n}", knobs, us)}.items():
            with open(os.path.join(d, fname), "w") as f:
                json.dump(obj, f)
        with tarfile.open(os.path.join(root, f"queue-0{n + 1}-p.tgz"), "w:gz") as t:
            t.add(d, arcname=f"queue-0{n + 1}")


def sweep_table(root, out):
    """sweep_table.py over root: the process and its JSON sweeps ([] when it failed)."""
    r = subprocess.run([sys.executable, os.path.join(HERE, "sweep_table.py"), root, "--json", out],
                       capture_output=True, text=True)
    return r, json.load(open(out))["sweeps"] if r.returncode == 0 else []


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sweep = os.path.join(tmp, "sweep")
        os.makedirs(sweep)
        # An @file variant (another kernel file, the control's knobs): named by its file.
        old_file = dict(result("d", {"X": 1, "Y": 2}, 125.0), kernel_file="plans/old_kernel.cu")
        files = {"prounding-rceil_.json": result("a", {"X": 1, "Y": 2}, 100.0),
                 "prounding-rceil_X-2.json": result("b", {"X": 2, "Y": 2}, 80.0),
                 "prounding-rceil_Y-3.json": result("c", {"X": 1, "Y": 3}, 0, verdict="crashed"),
                 "prounding-rceil_@file-plans-old_kernel.cu.json": old_file}
        for name, obj in files.items():
            with open(os.path.join(sweep, name), "w") as f:
                json.dump(obj, f)
        with tarfile.open(os.path.join(tmp, "sweep-p.tgz"), "w:gz") as t:
            t.add(sweep, arcname="sweep")
        out = os.path.join(tmp, "table.json")
        r = subprocess.run([sys.executable, os.path.join(HERE, "sweep_table.py"), tmp, "--json", out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout, r.stderr)
            return 1
        table = json.load(open(out))["sweeps"]
        variants = {v["knobs"]: v for v in table[0]["variants"]}
        if len(table) != 1 or len(table[0]["variants"]) != 4:
            failures.append(f"one setting, four variants expected: {table}")
        if set(variants) != {"default", "X=2", "Y=3", "file=old_kernel.cu"}:
            failures.append(f"variants named by what they change: {sorted(variants)}")
        if variants.get("file=old_kernel.cu", {}).get("geomean_control_over_this") != 0.8:
            failures.append("the other file's variant is held to the control (100 over 125 us)")
        ratio = variants.get("X=2", {}).get("geomean_control_over_this")
        if ratio != 1.25:
            failures.append(f"control 100 us over variant 80 us is 1.25, got {ratio}")
        if variants.get("X=2", {}).get("bench", {}).get("K32 M64", {}).get("of_sol") != 0.625:
            failures.append("of_sol is sol_us over the median")
        if variants.get("Y=3", {}).get("verdict") != "crashed" or "boom" not in variants["Y=3"].get("message", ""):
            failures.append("a failed variant keeps its verdict and message")
        if "x1.250" not in r.stdout:
            failures.append("the printed table shows the ratio")
        # The control timed again after the variants (_again): variants against the mean of the
        # two (100 and 90 -> 95 over 76 = 1.25), the repeat's own row, the controls' drift.
        again = os.path.join(tmp, "again")
        os.makedirs(os.path.join(again, "sweep"))
        files = {"prounding-rceil_.json": result("a", {"X": 1, "Y": 2}, 100.0),
                 "prounding-rceil_X-2.json": result("b", {"X": 2, "Y": 2}, 76.0),
                 "prounding-rceil_again.json": result("c", {"X": 1, "Y": 2}, 90.0)}
        for name, obj in files.items():
            with open(os.path.join(again, "sweep", name), "w") as f:
                json.dump(obj, f)
        r, ag = sweep_table(again, os.path.join(tmp, "again.json"))
        rows = {v["knobs"]: v for v in ag[0]["variants"]} if ag else {}
        got = {k: rows.get(k, {}).get("geomean_control_over_this")
               for k in ("default", "X=2", "default (again)")}
        if got != {"default": 0.95, "X=2": 1.25, "default (again)": 1.0556}:
            failures.append(f"variants against both controls' mean: {got} {r.stderr}")
        if not ag or ag[0].get("control_drift") != {"K32 M64": 1.1111}:
            failures.append(f"the controls' drift: {ag[0].get('control_drift') if ag else None}")
        if list(rows)[:2] != ["default", "default (again)"]:
            failures.append(f"the controls lead the table: {list(rows)}")
        if "slowest / fastest" not in r.stdout or "x1.111" not in r.stdout:
            failures.append(f"the printed table shows the drift: {r.stdout}")
        # Two queue entries of one problem in one run: the second control is slower (drift); its
        # variant must be held to it, not to the first entry's control.
        two = os.path.join(tmp, "two")
        queue_entries(two, tmp, [(100.0, "X-2", {"X": 2, "Y": 2}, 80.0),
                                 (200.0, "Y-4", {"X": 1, "Y": 4}, 160.0)])
        r, two_sweeps = sweep_table(two, os.path.join(tmp, "two.json"))
        rows = {v["knobs"]: v for v in two_sweeps[0]["variants"]} if two_sweeps else {}
        got = {k: rows.get(k, {}).get("geomean_control_over_this") for k in ("X=2", "Y=4")}
        if got != {"X=2": 1.25, "Y=4": 1.25}:
            failures.append(f"each variant against its own sweep's control (1.25 each): {got} {r.stderr}")
        # Two GPU calls, each with a fresh store: their evaluation ids repeat but both count.
        calls = os.path.join(tmp, "calls")
        for n, us in enumerate((100.0, 90.0)):
            d = os.path.join(tmp, f"call{n}")
            os.makedirs(d)
            for fname, obj in {"prounding-rceil_.json": result(1, {"X": 1, "Y": 2}, us),
                               f"prounding-rceil_Z-{n}.json": result(2, {"X": 1, "Y": 2, "Z": n},
                                                                     us / 2)}.items():
                with open(os.path.join(d, fname), "w") as f:
                    json.dump(obj, f)
            os.makedirs(os.path.join(calls, f"c{n}"))
            with tarfile.open(os.path.join(calls, f"c{n}", "queue-01-p.tgz"), "w:gz") as t:
                t.add(d, arcname="sweep")
        out3 = os.path.join(tmp, "calls.json")
        r = subprocess.run([sys.executable, os.path.join(HERE, "sweep_table.py"), calls, "--json",
                            out3], capture_output=True, text=True)
        rows = {}
        if r.returncode == 0:
            rows = {v["knobs"]: v for v in json.load(open(out3))["sweeps"][0]["variants"]}
        got = {k: rows.get(k, {}).get("geomean_control_over_this") for k in ("Z=0", "Z=1")}
        if got != {"Z=0": 2.0, "Z=1": 2.0}:
            failures.append(f"two calls' evaluations with equal ids both count: {got} {r.stderr}")
        # A queue entry repeated (a noisy shape): the variant's line over both sweeps, the
        # geomean of its ratios (1.25 and 0.8 -> 1.0), their range, and the controls' spread.
        rep = os.path.join(tmp, "rep")
        queue_entries(rep, tmp, [(100.0, "X-2", {"X": 2, "Y": 2}, 80.0),
                                 (90.0, "X-2", {"X": 2, "Y": 2}, 112.5)])
        r, rep_sweeps = sweep_table(rep, os.path.join(tmp, "rep.json"))
        reps = rep_sweeps[0].get("repeated", []) if rep_sweeps else []
        want = [{"knobs": "X=2", "sweeps": 2, "bench": {"K32 M64": {"geomean": 1.0, "min": 0.8,
                                                                     "max": 1.25}},
                 "control_spread": {"K32 M64": 1.1111}, "geomean": 1.0}]
        if reps != want:
            failures.append(f"a repeated variant's line over its sweeps: {reps} {r.stderr}")
        if "X=2 over 2 sweeps" not in r.stdout or "ctl 1.111" not in r.stdout:
            failures.append(f"the printed table shows the repeated line: {r.stdout}")
        # A variant in one sweep only gets no such line.
        if not two_sweeps or two_sweeps[0].get("repeated"):
            failures.append("variants of one sweep each are not repeats")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
