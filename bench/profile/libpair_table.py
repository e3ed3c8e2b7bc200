#!/usr/bin/env python3
"""Reads `scripts/gpu_session.sh libpair`: our kernel and the library baseline, each evaluated in
turn (bench medians), the peer script's times, and the SM clock and board power nvidia-smi
sampled while each ran. Prints per problem a table of bench medians (us) with the library's time
over ours (geomean over rounds: > 1 means ours is faster), then each run's mean clock and power.

Usage: libpair_table.py DIR [--json OUT]"""
import argparse, datetime, glob, json, math, os, re, statistics, sys


def shape_key(shape):
    """{"M": 8, "N": 16, "K": 32} or "M=8,N=16,K=32" -> "K=32 M=8 N=16" (symbols sorted)."""
    if isinstance(shape, str):
        shape = dict(kv.split("=", 1) for kv in shape.split(",") if "=" in kv)
    return " ".join(f"{k}={shape[k]}" for k in sorted(shape) if k != "form")


def load(path):
    """A JSON file, or {} where it is missing or cut short (a run that did not finish)."""
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return {}


def bench_medians(path):
    """Bench case medians of one evaluation JSON, by shape key; {} if it did not run."""
    ev = load(path)
    out = {}
    for c in ev.get("cases", []):
        if c.get("kind") == "bench" and "timing" in c and "shape" in c:
            out[shape_key(c["shape"])] = c["timing"]["median_us"]
    return out


def peer_times(path):
    """{shape key: {peer: protocol_us}} from a peer script's JSON."""
    res = load(path)
    out = {}
    for key, r in res.get("shapes", {}).items():
        if isinstance(r, dict):
            out[shape_key(key)] = {n: v["protocol_us"] for n, v in r.items()
                                   if isinstance(v, dict) and "protocol_us" in v}
    return out


def samples(path):
    """[(epoch seconds, MHz, W)] from nvidia-smi's csv,noheader,nounits lines."""
    out = []
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return out
    for line in lines:
        f = [x.strip() for x in line.split(",")]
        if len(f) < 3:
            continue
        try:
            t = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            out.append((t, float(f[1]), float(f[2])))
        except ValueError:
            continue
    return out


def window_stats(smi, t0, t1):
    inside = [(mhz, w) for t, mhz, w in smi if t0 <= t <= t1]
    if not inside:
        return None
    mhz = [m for m, _ in inside]
    return {"samples": len(inside), "sm_mhz": statistics.mean(mhz), "sm_mhz_min": min(mhz),
            "power_w": statistics.mean(w for _, w in inside)}


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--json")
    a = ap.parse_args()
    smi = samples(os.path.join(a.dir, "smi.csv"))
    windows = []
    try:
        for line in open(os.path.join(a.dir, "windows.txt")):
            p, who, r, t0, t1 = line.split()
            windows.append({"problem": p, "who": who, "round": int(r),
                            "clock": window_stats(smi, float(t0), float(t1))})
    except OSError:
        pass
    report = {}
    for p in sorted({w["problem"] for w in windows}):
        runs = {}
        for path in sorted(glob.glob(os.path.join(a.dir, f"{p}.*.*.json"))):
            m = re.match(rf"{re.escape(p)}\.(ours|lib)\.(\d+)\.json$", os.path.basename(path))
            if m:
                runs[(m.group(1), int(m.group(2)))] = bench_medians(path)
        peers = peer_times(os.path.join(a.dir, f"{p}.peers.json"))
        cols = sorted(runs, key=lambda k: (k[1], k[0] != "ours"))
        shapes = sorted({s for r in runs.values() for s in r})
        print(f"== {p}: bench medians (us); lib/ours > 1: ours faster")
        print("  " + "shape".ljust(26) + "".join(f"{w}#{r}".rjust(10) for w, r in cols) +
              "  lib/ours  peers")
        rows = {}
        for s in shapes:
            ours = [runs[c][s] for c in cols if c[0] == "ours" and s in runs[c]]
            lib = [runs[c][s] for c in cols if c[0] == "lib" and s in runs[c]]
            ratio = geomean(lib) / geomean(ours) if ours and lib else float("nan")
            pe = peers.get(s, {})
            rows[s] = {"ours_us": ours, "lib_us": lib, "lib_over_ours": ratio, "peers_us": pe}
            print("  " + s.ljust(26) +
                  "".join((f"{runs[c][s]:10.1f}" if s in runs[c] else " " * 10) for c in cols) +
                  f"  {ratio:8.3f}  " + ", ".join(f"{n} {v:.1f}" for n, v in pe.items()))
        for w in (w for w in windows if w["problem"] == p):
            c = w["clock"]
            if c:
                print(f"  {w['who']}#{w['round']}: SM {c['sm_mhz']:.0f} MHz (min "
                      f"{c['sm_mhz_min']:.0f}), {c['power_w']:.0f} W over {c['samples']} samples")
        report[p] = {"shapes": rows, "windows": [w for w in windows if w["problem"] == p]}
    if a.json:
        json.dump(report, open(a.json, "w"), indent=1)
    return 0 if report else 1


if __name__ == "__main__":
    sys.exit(main())
