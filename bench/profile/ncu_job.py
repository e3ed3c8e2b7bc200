#!/usr/bin/env python3
"""From a `warpsmith eval --keep-scratch --json` result: the candidate runner's job cut down for
Nsight Compute (bench cases only, one warm-up and two timed launches each, results and dumps in
a fresh folder beside it), on stdout the plan's kernel names joined by '|' for ncu's
--kernel-name filter, and in OUT_JOB.launches the number of launches one run of the plan makes
at the first bench case (a report of that many launches covers every kernel of the run, not
only a first conversion launch). Usage: ncu_job.py EVAL.json OUT_JOB.json (exit 1 when there
is no job)."""
import json, os, sys


def main():
    try:
        ev = json.load(open(sys.argv[1]))
    except (OSError, ValueError) as e:  # eval failed before writing JSON (e.g. bad arguments)
        err = os.path.splitext(sys.argv[1])[0] + ".err"
        detail = open(err).read().strip()[:400] if os.path.isfile(err) else ""
        print(f"ncu_job: no evaluation result in {sys.argv[1]} ({e}) {detail}", file=sys.stderr)
        return 1
    scratch = ev.get("kept_scratch")
    if not scratch or not os.path.isfile(os.path.join(scratch, "candidate.job.json")):
        print(f"ncu_job: no kept candidate job ({ev.get('verdict')}: {ev.get('message', '')[:200]})",
              file=sys.stderr)
        return 1
    job = json.load(open(os.path.join(scratch, "candidate.job.json")))
    out_dir = os.path.join(os.path.dirname(os.path.abspath(sys.argv[2])), "ncu-run")
    os.makedirs(out_dir, exist_ok=True)
    cases = []
    for c in job["cases"]:
        if not c["id"].startswith("bench-") or not c.get("timing"):
            continue
        c["timing"].update({"warmup": 1, "warmup_ms": 0, "iterations": 2, "audit_iteration": 0})
        c["dump"] = os.path.join(out_dir, "cand-" + c["id"])
        c["budget_s"] = 600  # ncu replays each launch; the watchdog must not take that for a hang
        cases.append(c)
    if not cases:
        print("ncu_job: the evaluation has no timed bench case", file=sys.stderr)
        return 1
    job["cases"] = cases
    job["result"] = os.path.join(out_dir, "result.json")
    json.dump(job, open(sys.argv[2], "w"), indent=1)
    with open(os.path.splitext(sys.argv[2])[0] + ".launches", "w") as f:
        f.write(f"{max(1, len(cases[0].get('launches', [])))}\n")
    names = sorted({k["name"] for k in ev.get("resources", [])})
    print("|".join(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
