#!/usr/bin/env python3
"""Tests of bench/kernel_table.py on synthetic runs: which evaluation a row shows, how peers match
shapes and settings, the ratio's direction. Usage: kernel_table_test.py (exit 1 on a failure)."""
import json, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kernel_table  # noqa: E402


def case(shape, us, sol, kind="bench"):
    return {"kind": kind, "shape": shape, "timing": {"median_us": us}, "sol_us": sol,
            "verdict": "ok"}


def evaluation(problem, params, knobs, cases, hidden=True, verdict="ok"):
    cs = list(cases) + ([{"kind": "hidden", "verdict": "ok"}] if hidden else [])
    return {"problem": problem, "params": params, "knobs": knobs, "cases": cs, "verdict": verdict,
            "geomean_us": 1.0}


def write(d, name, obj):
    os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
    with open(os.path.join(d, name), "w") as f:
        json.dump(obj, f)


failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def main():
    defaults = {k: v for k, v in kernel_table.default_knobs("bf16_gemm").items()}
    other = dict(defaults, BN=128)
    shape = {"M": 8192, "N": 8192, "K": 8192}
    with tempfile.TemporaryDirectory() as tmp:
        run1, run2 = os.path.join(tmp, "r1"), os.path.join(tmp, "r2")
        # Run 1: the default knobs (1000 us); run 2: other knobs (900 us, faster) and the default
        # again without hidden shapes (800 us): the row must show run 1's complete default.
        write(run1, "kernels/bf16_gemm.json",
              evaluation("bf16_gemm", {}, defaults, [case(shape, 1000.0, 800.0)]))
        write(run2, "sweep/a.json", evaluation("bf16_gemm", {}, other, [case(shape, 900.0, 800.0)]))
        write(run2, "sweep/b.json",
              evaluation("bf16_gemm", {}, defaults, [case(shape, 800.0, 800.0)], hidden=False))
        # A peer keyed the gemm_peers way, and one at another shape that must not match.
        write(run2, "peers/bf16_gemm.peers.json", {"shapes": {
            "M=8192,N=8192,K=8192": {"cublas_bf16": {"protocol_us": 1250.0}},
            "M=16,N=4096,K=7168": {"cublas_bf16": {"protocol_us": 1.0}}}})
        # A parameterized problem: the peer entry of the other rounding must not match.
        qshape = {"M": 16384, "K": 2880}
        write(run1, "kernels/q.json", evaluation("mxfp8_quantize_rowwise", {"rounding": "floor"},
                                                  {}, [case(qshape, 40.0, 36.0)]))
        write(run1, "kernels/qr.json", evaluation("mxfp8_quantize_rowwise", {"rounding": "rceil"},
                                                   {}, [case(qshape, 4.0, 36.0)]))
        write(run1, "kernels/mxfp8_quantize_rowwise.peers.json", {"shapes": {"16384x2880": {
            "rceil": {"torch_compile_protocol_us": 10.0},
            "floor": {"torch_compile_protocol_us": 80.0, "eager_protocol_us": 200.0}}}})
        # The shape's floor (bench/stream_floor.py): 36 us at 16384x2880, none at other shapes.
        floors = os.path.join(tmp, "floors.json")
        write(tmp, "floors.json", {"floors": [
            {"problem": "mxfp8_quantize_rowwise", "shape": {"K": 2880, "M": 16384},
             "stream_us": 36.0, "copy_us": 38.0},
            {"problem": "mxfp8_quantize_rowwise", "shape": {"K": 7168, "M": 16384},
             "stream_us": 1.0, "copy_us": 1.0},
            {"problem": "mxfp8_quantize_rowwise", "shape": {"K": 2880, "M": 16384},
             "params": {"rounding": "rceil"}, "stream_us": 2.0, "copy_us": 2.0}]})
        # moe_decode_fused: the peer counts the weight bytes its routing reads (300 MB) where the
        # spec counts 200 MB; copy rate = 200 MB / 50 us; ours 100 us: 300 / 4 / 100 = 0.75.
        dshape = {"E": 128, "H": 2048, "I": 768, "T": 8, "TOPK": 8}
        dcase = dict(case(dshape, 100.0, 50.0), bytes=200e6)
        write(run1, "kernels/d.json", evaluation("moe_decode_fused", {}, {}, [dcase]))
        # Another shape's entry first: it must not match.
        write(run1, "kernels/moe_decode_fused.peers.json", {"shapes": {
            "T1_E128_K8_H2048_I768": {"default": {"distinct_weight_bytes": 1.0}},
            "T8_E128_K8_H2048_I768": {"default": {"distinct_weight_bytes": 300e6,
                                                  "grouped_mm": {"eager_protocol_us": 150.0}}}}})
        out = os.path.join(tmp, "t.json")
        p = subprocess.run([sys.executable, os.path.join(HERE, "kernel_table.py"),
                            "--run", f"one={run1}", "--run", f"two={run2}", "--floors", floors,
                            "--json", out], capture_output=True, text=True)
        check("of floor" in p.stdout, "the table has the floor's columns")
        check(p.returncode == 0, f"kernel_table.py failed: {p.stderr}")
        rows = json.load(open(out))["rows"] if p.returncode == 0 else []
        gemm = [r for r in rows if r["problem"] == "bf16_gemm"]
        check(len(gemm) == 1, f"one bf16_gemm row, got {len(gemm)}")
        if gemm:
            r = gemm[0]
            check(r["us"] == 1000.0 and r["run"] == "one",
                  f"the default with hidden shapes is shown, got {r['us']} from {r['run']}")
            check(r["peer"] == "cublas_bf16" and r["peer_us"] == 1250.0,
                  f"the peer at this shape, got {r.get('peer')} {r.get('peer_us')}")
            check(abs(r["ratio"] - 1.25) < 1e-9, f"ratio = peer / ours, got {r.get('ratio')}")
            check(abs(r["tflops"] - 2 * 8192 ** 3 / 1000.0 / 1e6) < 1e-6, "TF/s of 2MNK")
            check(abs(r["of_sol"] - 0.8) < 1e-9, f"of SOL = sol / ours, got {r.get('of_sol')}")
        q = [r for r in rows if r["problem"] == "mxfp8_quantize_rowwise"
             and r["params"] == {"rounding": "floor"}]
        check(len(q) == 1, f"one floor-rounding quantizer row, got {len(q)}")
        qr = [r for r in rows if r["problem"] == "mxfp8_quantize_rowwise"
              and r["params"] == {"rounding": "rceil"}]
        check(len(qr) == 1 and qr[0].get("floor_us") == 2.0,
              f"a setting's own floor before the every-setting one, got "
              f"{[r.get('floor_us') for r in qr]}")
        if q:
            check(q[0]["peer_us"] == 80.0 and q[0]["peer"] == "torch_compile",
                  f"floor's best peer, not rceil's: got {q[0].get('peer')} {q[0].get('peer_us')}")
            check(q[0].get("floor_us") == 36.0 and abs(q[0]["of_floor"] - 0.9) < 1e-9,
                  f"of floor = floor / ours at the same shape and setting (a floor of every "
                  f"setting, not rceil's), got {q[0].get('of_floor')}")
        if gemm:
            check("of_floor" not in gemm[0], "no floor where none was measured")
            check("of_copy_read" not in gemm[0], "no bytes-read fraction without a peer's count")
        check("of copy, read" in p.stdout, "the table has the bytes-read column")
        dec = [r for r in rows if r["problem"] == "moe_decode_fused"]
        check(len(dec) == 1 and abs(dec[0].get("of_copy_read", 0) - 0.75) < 1e-9,
              f"of copy over the bytes read = read / (bytes / sol) / ours at this shape's entry, "
              f"got {[r.get('of_copy_read') for r in dec]}")
    if failures:
        print("kernel_table_test: FAILED\n  " + "\n  ".join(failures))
        return 1
    print("kernel_table_test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
