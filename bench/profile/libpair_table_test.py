#!/usr/bin/env python3
"""Tests of bench/profile/libpair_table.py on a synthetic libpair folder: bench medians pair up by
shape across rounds (the library's geomean over ours), test cases are left out, the peer script's
shape keys ("M=..,N=..,K=..") meet the evaluator's shape dicts, and each run's clock and power
are the means of the nvidia-smi samples inside its window only. Exit 1 on a failure."""
import datetime, json, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = 1_800_000_000.0  # epoch seconds of the first window


def evaluation(medians):
    cases = [{"kind": "test", "shape": {"M": 8, "N": 16, "K": 32}, "verdict": "ok"}]
    for (m, n, k), us in medians.items():
        cases.append({"kind": "bench", "shape": {"K": k, "M": m, "N": n}, "verdict": "ok",
                      "timing": {"median_us": us}})
    return {"verdict": "ok", "cases": cases}


def main():
    failures, checks = [], [0]

    def check(cond, what):
        checks[0] += 1
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as d:
        p = "fp8_rowwise_gemm"
        runs = {("ours", 1): 100.0, ("lib", 1): 90.0, ("ours", 2): 100.0, ("lib", 2): 40.0}
        windows = []
        for i, ((who, r), us) in enumerate(runs.items()):
            json.dump(evaluation({(64, 32, 16): us, (8, 8, 8): 5.0}),
                      open(os.path.join(d, f"{p}.{who}.{r}.json"), "w"))
            windows.append(f"{p} {who} {r} {T0 + 10 * i} {T0 + 10 * i + 5}")
        open(os.path.join(d, "windows.txt"), "w").write("\n".join(windows) + "\n")
        json.dump({"shapes": {"M=64,N=32,K=16": {"cublaslt": {"protocol_us": 50.0}}}},
                  open(os.path.join(d, f"{p}.peers.json"), "w"))
        lines = []
        for i in range(4):  # two samples inside each window, one between windows
            for dt, mhz, w in ((1, 1000 + 100 * i, 400), (4, 1200 + 100 * i, 600), (7, 1, 1)):
                ts = datetime.datetime.fromtimestamp(T0 + 10 * i + dt)
                lines.append(f"{ts.strftime('%Y/%m/%d %H:%M:%S.%f')[:-3]}, {mhz}, {w}, 50")
        open(os.path.join(d, "smi.csv"), "w").write("\n".join(lines) + "\n")
        out = os.path.join(d, "t.json")
        r = subprocess.run([sys.executable, os.path.join(HERE, "libpair_table.py"), d,
                            "--json", out], capture_output=True, text=True)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        t = json.load(open(out))[p]
        row = t["shapes"].get("K=16 M=64 N=32", {})
        check(row.get("ours_us") == [100.0, 100.0], f"ours: {row}")
        check(abs(row.get("lib_over_ours", 0) - 0.6) < 1e-9, f"ratio sqrt(90*40)/100: {row}")
        check(row.get("peers_us") == {"cublaslt": 50.0}, f"peers: {row}")
        check("K=32 M=8 N=16" not in t["shapes"], "test cases are not bench rows")
        w = t["windows"][1]["clock"]
        check(w and w["samples"] == 2 and abs(w["sm_mhz"] - 1200) < 1e-9 and
              abs(w["power_w"] - 500) < 1e-9 and w["sm_mhz_min"] == 1100, f"window: {w}")
    for f in failures:
        print("FAIL:", f)
    print(f"libpair_table_test: {checks[0] - len(failures)} of {checks[0]} checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
