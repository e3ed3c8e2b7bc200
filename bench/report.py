# Merges bench/run.sh's outputs into one JSON: per shape and parameter value, the kernel's and the
# baseline's median time, bandwidth and fraction of speed-of-light, and the peers' figures from the
# same run with the ratios. Usage: python3 bench/report.py OUT_DIR PROBLEM COMMAND
import datetime, glob, json, os, subprocess, sys

out_dir, problem, command = sys.argv[1], sys.argv[2], sys.argv[3]
probe = json.load(open(os.path.join(out_dir, "probe.json")))
peers_path = os.path.join(out_dir, "peers.json")
peers = json.load(open(peers_path)) if os.path.exists(peers_path) else None


def shape_key(shape):
    return f"{shape['M']}x{shape['K']}" if set(shape) == {"M", "K"} else json.dumps(shape)


evals = {}
for path in sorted(glob.glob(os.path.join(out_dir, "eval-*.json"))):
    label, value = os.path.basename(path)[5:-5].rsplit("-", 1)
    evals[(label, value)] = json.load(open(path))

table, rows = [], []
for (label, value), e in sorted(evals.items()):
    if label != "kernel":
        continue
    base = evals.get(("baseline", value))
    for c in e["cases"]:
        if "timing" not in c:
            continue
        key = shape_key(c["shape"])
        us = c["timing"]["median_us"]
        row = {"shape": key, "param": value, "verdict": e["verdict"], "median_us": us,
               "p90_us": c["timing"]["p90_us"], "sol_us": c["sol_us"],
               "TBps": c["bytes"] / us / 1e6, "fraction_of_sol": c["sol_us"] / us}
        if base:
            b = next((bc for bc in base["cases"] if bc.get("shape") == c["shape"] and "timing" in bc), None)
            if b:
                row["baseline_median_us"] = b["timing"]["median_us"]
                row["speedup_over_baseline"] = b["timing"]["median_us"] / us
        if peers and "error" not in peers["shapes"].get(key, {}).get(value, {"error": 1}):
            p = peers["shapes"][key][value]
            row["peer"] = p
            row["ratio_to_triton_protocol"] = row["TBps"] / p["triton_protocol_TBps"]
            if p.get("torch_compile_protocol_TBps"):
                row["ratio_to_torch_compile"] = row["TBps"] / p["torch_compile_protocol_TBps"]
        rows.append(row)
        table.append(f"{key:>12} {value:>6} {e['verdict']:>4} {us:9.2f} us {row['TBps']:.3f} TB/s "
                     f"{row['fraction_of_sol']:.3f} of SOL"
                     + (f", x{row['ratio_to_triton_protocol']:.3f} vs Triton" if "peer" in row else "")
                     + (f", x{row['speedup_over_baseline']:.1f} vs baseline" if "speedup_over_baseline" in row else ""))

try:
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
except OSError:
    smi = ""
print(json.dumps({
    "problem": problem,
    "gpu": probe.get("gpu"), "arch": probe.get("arch"), "driver": probe.get("driver"),
    "nvidia_smi": smi,
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "command": command,
    "method": "warpsmith eval: CUDA events around the plan's launches, 3 warm-up runs, up to 200 "
              "timed runs, outputs poisoned and L2 flushed by reading 4x its size before each, "
              "input sets rotated, median; the peers timed with the same protocol in the same "
              "process run (bench/peers/), do_bench figures beside them",
    "ceilings": {k: probe.get(k) for k in ("copy_bytes_per_s", "bf16_flops_per_s", "fp8_flops_per_s")},
    "rows": rows, "table": table, "peers": peers,
}, indent=1))
