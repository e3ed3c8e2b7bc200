#!/usr/bin/env python3
"""Tests of scripts/check_sass.py's register claims: `warpsmith:regs` lines parse (with their
parameter filters) or are refused with the file and line; a compile's resource report breaks a
claim by more registers, by any spill, or by lacking the function; and the whole check, run on a
stand-in tree and a stand-in warpsmith, fails exactly where a setting's registers exceed the
claim. Exit 1 on a failure."""
import json, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_sass  # noqa: E402

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def check_parse(d):
    path = os.path.join(d, "k.cu")
    write(path, "// warpsmith:regs sm_90a: main<=80 gather<=40\n"
                "// warpsmith:regs sm_100a rounding=rceil: main<=64\n"
                "// warpsmith:sass sm_90a: F2FP\n")
    claims = check_sass.parse_regs_claims(path)
    expect(claims == [("sm_90a", {}, {"main": 80, "gather": 40}),
                      ("sm_100a", {"rounding": "rceil"}, {"main": 64})],
           f"parse: got {claims}")
    for bad in ["// warpsmith:regs sm_90a: main<80\n", "// warpsmith:regs sm_90a:\n",
                "// warpsmith:regs sm_90a main<=80\n", "// warpsmith:regs: main<=80\n"]:
        write(path, "// fine\n" + bad)
        try:
            check_sass.parse_regs_claims(path)
            failures.append(f"parse: accepted {bad.strip()!r}")
        except ValueError as e:
            expect(f"{path}:2:" in str(e), f"parse: the error names no line: {e}")


def check_failures():
    res = [{"name": "main", "registers": 80, "spill_stores": 0, "spill_loads": 0},
           {"name": "gather", "registers": 41, "spill_stores": 0, "spill_loads": 0},
           {"name": "spilly", "registers": 64, "spill_stores": 8, "spill_loads": 8}]
    expect(check_sass.regs_failures(res, {"main": 80}) == [], "bounds: 80 <= 80 broken")
    out = check_sass.regs_failures(res, {"gather": 40})
    expect(len(out) == 1 and "41 registers" in out[0], f"bounds: 41 > 40 not caught: {out}")
    out = check_sass.regs_failures(res, {"spilly": 255})
    expect(len(out) == 1 and "spills" in out[0], f"bounds: a spill not caught: {out}")
    out = check_sass.regs_failures(res, {"missing": 255})
    expect(len(out) == 1 and "no such kernel" in out[0], f"bounds: a missing kernel: {out}")


# A stand-in warpsmith: `eval P K --compile-only --arch A --json --set rounding=R` prints a
# resource report whose registers are 88 at rceil on sm_90a and 72 elsewhere, and leaves the
# cubin where check_sass.py looks for it.
FAKE_WARPSMITH = """#!/usr/bin/env python3
import json, os, sys
a = sys.argv[1:]
ws = a[a.index("--workspace") + 1]
arch = a[a.index("--arch") + 1]
rceil = "rounding=rceil" in a
os.makedirs(os.path.join(ws, "cache"), exist_ok=True)
h = "h_" + arch + ("_rceil" if rceil else "_floor")
open(os.path.join(ws, "cache", h + ".cubin"), "w").close()
regs = 88 if rceil and arch == "sm_90a" else 72
print(json.dumps({"verdict": "not_run", "compile": {"ok": True, "hash": h}, "resources": [
    {"name": "main", "registers": regs, "spill_stores": 0, "spill_loads": 0}]}))
"""


def check_end_to_end(d):
    root = os.path.join(d, "tree")
    write(os.path.join(root, "problems", "p", "spec.json"),
          json.dumps({"params": {"rounding": {"values": ["rceil", "floor"]}}}))
    kernel = os.path.join(root, "kernels", "p", "kernel.cu")
    fake = os.path.join(d, "warpsmith")
    write(fake, FAKE_WARPSMITH)
    os.chmod(fake, 0o755)

    def run(claims):
        write(kernel, claims + "extern \"C\" __global__ void main() {}\n")
        return subprocess.run([sys.executable, os.path.join(HERE, "check_sass.py"), "--warpsmith",
                               fake, "--root", root, "--work", os.path.join(d, "work")],
                              capture_output=True, text=True)

    r = run("// warpsmith:regs sm_90a: main<=80\n// warpsmith:regs sm_100a: main<=80\n")
    expect(r.returncode == 1, f"e2e: 88 > 80 at rceil passed: {r.stdout}{r.stderr}")
    expect("sm_90a rounding=rceil: register claim broken: main: 88 registers" in r.stdout,
           f"e2e: the failure names no setting: {r.stdout}")
    expect("ok: kernels/p/kernel.cu sm_90a rounding=floor" in r.stdout,
           f"e2e: floor not reported ok: {r.stdout}")
    r = run("// warpsmith:regs sm_90a rounding=floor: main<=80\n")
    expect(r.returncode == 0, f"e2e: a claim on floor alone failed: {r.stdout}{r.stderr}")
    r = run("// warpsmith:regs sm_90a rounding=half: main<=80\n")
    expect(r.returncode == 1 and "matches no parameter setting" in r.stdout,
           f"e2e: a claim on no setting passed: {r.stdout}")


with tempfile.TemporaryDirectory() as tmp:
    check_parse(tmp)
    check_failures()
    check_end_to_end(tmp)
for f in failures:
    print("FAIL:", f)
print(f"check_sass_test: {len(failures)} failures")
sys.exit(1 if failures else 0)
