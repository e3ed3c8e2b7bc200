#!/usr/bin/env python3
"""Tests of bench/profile/ncu_source.py on a synthetic ncu source page (the layout ncu 2025 writes
with --page source --print-source sass --csv: a kernel-name line, then the header): predicated
opcodes count as their opcode, stall shares sum over instructions, 'Not Issued' columns are left
out, shared-memory wavefronts are kept per width, the hottest instruction comes first, --per
divides. Exit 1 on a failure."""
import csv, io, json, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)",
          "Warp Stall Sampling (Not-issued Samples)", "Instructions Executed",
          "L1 Wavefronts Shared", "L1 Wavefronts Shared Ideal", "stall_long_sb", "stall_short_sb",
          "stall_selected", "stall_short_sb (Not Issued)"]
ROWS = [
    ["0x10", "FMUL R24, R24, R170", "30", "28", "1,000", "0", "0", "0", "28", "2", "28"],
    ["0x20", "@!P0  BRA 0x90", "60", "60", "100", "0", "0", "60", "0", "0", "0"],
    ["0x30", "LDS.128 R4, [R2+0x800]", "10", "8", "250", "1,000", "1,000", "0", "8", "2", "8"],
    ["0x40", "FFMA R1, R2, R3, R1", "0", "0", "1,000", "0", "0", "0", "0", "0", "0"],
]


def write_page(path, sections):
    """A source page of (kernel name, rows) sections, each a kernel-name line and the header."""
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL)
    for name, rows in sections:
        w.writerow(["Kernel Name", name])
        w.writerow(HEADER)
        w.writerows(rows)
    with open(path, "w") as f:
        f.write(buf.getvalue())


def main():
    failures, checks = [], [0]

    def check(cond, what):
        checks[0] += 1
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.sass.csv")
        write_page(path, [("k", ROWS)])
        out = os.path.join(tmp, "s.json")
        r = subprocess.run([sys.executable, os.path.join(HERE, "ncu_source.py"), path, "--top", "2",
                            "--per", "10", "--json", out], capture_output=True, text=True)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        s = json.load(open(out)) if r.returncode == 0 else {}
        shares = s.get("stall_share", {})
        check(abs(shares.get("long_sb", 0) - 0.6) < 1e-9, f"long_sb share {shares}")
        check(abs(shares.get("short_sb", 0) - 0.36) < 1e-9, f"short_sb share {shares}")
        check(not any("Not Issued" in k for k in shares), "Not Issued columns counted")
        ops = s.get("opcodes", {})
        check(ops.get("BRA", {}).get("executed") == 100, f"predicated BRA {ops.get('BRA')}")
        check(ops.get("FMUL", {}).get("executed") == 1000, f"FMUL with a thousands separator {ops}")
        check(abs(ops.get("FFMA", {}).get("executed_share", 0) - 1000 / 2350) < 1e-4, "share")
        smem = s.get("shared_memory", {})
        check(smem.get("LDS.128", {}).get("wavefronts") == 1000, f"wavefronts {smem}")
        hot = s.get("hot_instructions", [])
        check(len(hot) == 2 and "BRA" in hot[0]["source"], f"hottest first, two of them: {hot}")
        check("100.0" in r.stdout, "--per 10 prints FMUL's 1000 / 10")

        # Two launches (NCU_LAUNCHES=2): each section summarized, in order, the first on top.
        two = os.path.join(tmp, "two.sass.csv")
        hgmma = ["0x10", "HGMMA.64x256x16.F32.BF16 R24, R152, gdesc[UR16], R24", "5", "5", "7",
                 "0", "0", "5", "0", "0", "0"]
        # ncu repeats a launch's page: the second "first" is counted once.
        write_page(two, [("first", ROWS), ("first", ROWS), ("second", [hgmma])])
        out2 = os.path.join(tmp, "two.json")
        r = subprocess.run([sys.executable, os.path.join(HERE, "ncu_source.py"), two, "--json",
                            out2], capture_output=True, text=True)
        check(r.returncode == 0, f"two sections: exit {r.returncode}: {r.stderr}")
        t = json.load(open(out2)) if r.returncode == 0 else {}
        ks = t.get("kernels", [])
        check([k.get("kernel") for k in ks] == ["first", "second"], f"sections {ks}")
        check(len(ks) == 2 and ks[1]["opcodes"].get("HGMMA", {}).get("executed") == 7,
              "the second section's own figures")
        check(abs(t.get("stall_share", {}).get("long_sb", 0) - 0.6) < 1e-9, "the first on top")
        check("== section 1: second" in r.stdout, "each section named in the printout")

        bad = os.path.join(tmp, "bad.csv")
        with open(bad, "w") as f:
            f.write("nothing,here\n")
        r = subprocess.run([sys.executable, os.path.join(HERE, "ncu_source.py"), bad],
                           capture_output=True, text=True)
        check(r.returncode != 0 and "no source-page header" in r.stderr,
              "a file without the header is an error that names it")
    for f in failures:
        print("FAIL:", f)
    print(f"ncu_source_test: {checks[0] - len(failures)} of {checks[0]} checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
