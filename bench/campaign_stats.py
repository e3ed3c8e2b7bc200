#!/usr/bin/env python3
"""Summarizes a campaign from the store: evaluations, verdicts, GPU time, the evaluator's
throughput and overhead beyond the timed work, and the best kernel against a reference kernel.

Usage: campaign_stats.py STORE.db [--campaign ID] [--reference-kernel-hash SHA]"""
import argparse
import json
import sqlite3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--campaign", type=int)
    ap.add_argument("--reference-source", help="file whose ranked evaluation is the 100%% mark")
    args = ap.parse_args()
    db = sqlite3.connect(args.db)
    cid = args.campaign or db.execute("SELECT MAX(id) FROM campaigns").fetchone()[0]
    rows = db.execute(
        "SELECT id, verdict, gpu_seconds, time_us, problem FROM evaluations WHERE campaign_id = ?",
        (cid,)).fetchall()
    verdicts = {}
    for _, v, _, _, _ in rows:
        verdicts[v] = verdicts.get(v, 0) + 1
    gpu_s = sum(r[2] for r in rows)
    ids = [r[0] for r in rows]
    timed_s = 0.0
    if ids:
        q = "SELECT SUM(median_us * iterations) FROM timings WHERE evaluation_id IN (%s)" % (
            ",".join("?" * len(ids)))
        timed_s = (db.execute(q, ids).fetchone()[0] or 0.0) * 1e-6
    ranked = [r for r in rows if r[3] > 0]
    best = min((r[3] for r in ranked), default=0.0)
    # Ranks in the order they were committed: after how many evaluations the best was reached.
    best_at = next((i + 1 for i, r in enumerate(rows) if r[3] > 0 and r[3] <= best), 0)
    wall = db.execute("SELECT wall_seconds FROM campaigns WHERE id = ?", (cid,)).fetchone()[0]
    out = {
        "campaign": cid,
        "evaluations": len(rows),
        "verdicts": verdicts,
        "gpu_seconds": gpu_s,
        "campaign_wall_seconds": wall,
        "timed_work_seconds": timed_s,
        "evaluations_per_gpu_minute": len(rows) / (gpu_s / 60) if gpu_s else 0,
        "overhead_seconds_per_evaluation": (gpu_s - timed_s) / len(rows) if rows else 0,
        "best_geomean_us": best,
        "best_reached_after_evaluations": best_at,
    }
    if args.reference_source:
        src = open(args.reference_source).read()
        ref = db.execute(
            "SELECT MIN(e.time_us) FROM evaluations e JOIN kernels k ON k.id = e.kernel_id "
            "WHERE k.source = ? AND e.time_us > 0 AND e.campaign_id IS NULL", (src,)).fetchone()[0]
        if ref:
            out["reference_geomean_us"] = ref
            out["fraction_of_reference_speed"] = ref / best if best else 0
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
