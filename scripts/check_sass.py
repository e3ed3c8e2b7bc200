#!/usr/bin/env python3
"""Checks that every hand-tuned kernel's SASS holds the instructions its header claims.

Each kernels/<problem>/kernel.cu may declare, in its header comment, lines of the form

    // warpsmith:sass ARCH [PARAM=VALUE ...]: OPCODE OPCODE ...

ARCH is sm_90a or sm_100a; the PARAM=VALUE filters (the problem's parameters) restrict the claim to
those settings, else it holds for every parameter setting. A NAME=VALUE whose NAME is not a
parameter is a knob: the claim is checked with that knob value (e.g. `STRATEGY=0`), the plan's
defaults for the others. An OPCODE matches a SASS instruction
whose opcode equals it or starts with it followed by a '.', so `F2FP.SATFINITE.E8` matches
`F2FP.SATFINITE.E8.F32.PACK_AB_MERGE_C.RP`. Each claimed line is checked for every parameter
setting it covers, with the plan's default knobs, compiled by warpsmith's own NVRTC path
(`warpsmith eval --compile-only --json`; the cubin is the workspace cache's <hash>.cubin).

cuobjdump comes from $CUOBJDUMP, PATH, /usr/local/cuda/bin, or else PyPI (nvidia-cuda-cuobjdump and
nvidia-cuda-nvdisasm, which cuobjdump needs for -sass) installed into a venv under --work. When none
of these works, the check skips (exit 77) unless WARPSMITH_REQUIRE_SASS=1 (CI), where it fails.

A kernel may also bound its registers, where its occupancy is part of what was measured:

    // warpsmith:regs ARCH [PARAM=VALUE ...]: FUNCTION<=N FUNCTION<=N ...

Each named kernel function (as the compile's resource report names it) must use at most N
registers per thread and spill nothing, read from `warpsmith eval --compile-only --json`
(no cuobjdump needed: these claims are checked even where the SASS claims skip). A change that
costs a memory-bound kernel a resident CTA per SM fails here, not silently on the next GPU run.

With --references, no claims are checked: the trusted GPU references (problems/*/reference.cu),
compiled by the evaluator's own reference path (`warpsmith problems verify --compile-only`), have
their SASS written to --sass-dir, every parameter setting and both architectures, to diff an edit
of problems/include before and after.

Usage: scripts/check_sass.py --warpsmith build/warpsmith [--root .] [--work build/sass-check]
       [--only PROBLEM ...] [--sass-dir DIR] [--references]
Exit: 0 every claim holds, 1 a claim does not hold or a kernel does not compile, 77 skipped.
"""

import argparse
import glob
import itertools
import json
import os
import re
import shutil
import subprocess
import sys

SKIP = 77
CLAIM = re.compile(r"^\s*//\s*warpsmith:sass\s+(sm_\d+a?)((?:\s+[A-Za-z_]\w*=\S+)*)\s*:\s*(.*)$")
REGS_CLAIM = re.compile(r"^\s*//\s*warpsmith:regs\s+(sm_\d+a?)((?:\s+[A-Za-z_]\w*=\S+)*)\s*:\s*(.*)$")
REGS_BOUND = re.compile(r"^([A-Za-z_]\w*)<=(\d+)$")
# A SASS line: /*0740*/  @!P3 F2FP.SATFINITE.E8.F32.PACK_AB_MERGE_C.RP R27, RZ, R27, RZ ;
SASS_LINE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(.*)$")
# An instruction without its address: @!P3 F2FP.SATFINITE.E8.F32.PACK_AB_MERGE_C.RP R27, ...
OPCODE = re.compile(r"^(?:@!?U?P[T0-9]+\s+)?([A-Z0-9_]+(?:\.[A-Z0-9_]+)*)")
PYPI_PACKAGES = ["nvidia-cuda-cuobjdump>=13,<14", "nvidia-cuda-nvdisasm>=13,<14"]


def _claim_lines(path, kind, pattern, parse_words, usage):
    """[(arch, {param: value}, parse_words(words))] from the file's `warpsmith:KIND` lines;
    parse_words returns None for words that do not parse."""
    claims = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if f"warpsmith:{kind}" not in line:
                continue
            m = pattern.match(line)
            parsed = parse_words(m.group(3).split()) if m else None
            if not parsed:
                raise ValueError(f"{path}:{n}: expected '// warpsmith:{kind} ARCH [P=V ...]: {usage}'")
            filters = dict(kv.split("=", 1) for kv in m.group(2).split())
            claims.append((m.group(1), filters, parsed))
    return claims


def parse_claims(path):
    """[(arch, {param: value}, [opcode])] from the file's warpsmith:sass lines."""
    return _claim_lines(path, "sass", CLAIM, lambda words: words, "OPCODE ...")


def _regs_bounds(words):
    bounds = [REGS_BOUND.match(w) for w in words]
    if not bounds or not all(bounds):
        return None
    return {b.group(1): int(b.group(2)) for b in bounds}


def parse_regs_claims(path):
    """[(arch, {param: value}, {function: max registers})] from the file's warpsmith:regs lines."""
    return _claim_lines(path, "regs", REGS_CLAIM, _regs_bounds, "FUNCTION<=N ...")


def regs_failures(resources, bounds):
    """What breaks the bounds {function: max registers} in a compile's resource report."""
    by_name = {r["name"]: r for r in resources}
    out = []
    for name, most in bounds.items():
        r = by_name.get(name)
        if r is None:
            out.append(f"{name}: no such kernel in the compile (has: {' '.join(sorted(by_name))})")
        elif r["registers"] > most:
            out.append(f"{name}: {r['registers']} registers, claimed <= {most}")
        elif r.get("spill_stores") or r.get("spill_loads"):
            out.append(f"{name}: spills ({r['spill_stores']} bytes stored, "
                       f"{r['spill_loads']} loaded)")
    return out


def find_cuobjdump(work):
    """Path of a cuobjdump that can disassemble (nvdisasm beside it or on PATH), or None."""
    candidates = [os.environ.get("CUOBJDUMP"), shutil.which("cuobjdump"), "/usr/local/cuda/bin/cuobjdump"]
    venv_bin = glob.glob(os.path.join(work, "venv", "lib", "python3*", "site-packages", "nvidia", "cu*", "bin"))
    candidates += [os.path.join(b, "cuobjdump") for b in venv_bin]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    venv = os.path.join(work, "venv")
    print(f"check_sass: no cuobjdump found; installing {' '.join(PYPI_PACKAGES)} into {venv}", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", "--disable-pip-version-check"]
                       + PYPI_PACKAGES, check=True, timeout=600)
    except (subprocess.SubprocessError, OSError) as e:
        print(f"check_sass: installing cuobjdump from PyPI failed: {e}", flush=True)
        return None
    for b in glob.glob(os.path.join(venv, "lib", "python3*", "site-packages", "nvidia", "cu*", "bin")):
        if os.access(os.path.join(b, "cuobjdump"), os.X_OK):
            return os.path.join(b, "cuobjdump")
    return None


def disassemble(cuobjdump, cubin):
    """The cubin's SASS: function headers and instructions, without addresses and encodings, so
    two compiles of the same code compare equal as text."""
    env = dict(os.environ)
    # cuobjdump -sass runs nvdisasm; the PyPI wheels put both in one bin folder.
    env["PATH"] = os.path.dirname(cuobjdump) + os.pathsep + env.get("PATH", "")
    r = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"cuobjdump -sass {cubin} failed: {r.stderr.strip()}")
    lines = []
    for line in r.stdout.splitlines():
        if "Function :" in line:
            lines.append(line.strip())
        elif m := SASS_LINE.match(line):
            lines.append(m.group(1).split(";")[0].strip())
    return lines


def sass_opcodes(lines, cubin):
    ops = {m.group(1) for m in map(OPCODE.match, lines) if m and not m.string.startswith("Function")}
    if not ops:
        raise RuntimeError(f"cuobjdump -sass {cubin} printed no instructions")
    return ops


def matches(claim, ops):
    return any(op == claim or op.startswith(claim + ".") for op in ops)


def warpsmith_cmd(args, *words, setting=None):
    """warpsmith on the checked tree's problems, with --set for each parameter of `setting`."""
    cmd = [args.warpsmith, "--workspace", os.path.join(args.work, "ws"),
           "--problems-dir", os.path.join(args.root, "problems"), *words]
    for name, value in (setting or {}).items():
        cmd += ["--set", f"{name}={value}"]
    return cmd


def write_sass(args, problem, chosen, arch, lines, suffix=".sass"):
    """PROBLEM__NAME-VALUE...__ARCH.sass under --sass-dir."""
    os.makedirs(args.sass_dir, exist_ok=True)
    tag = "__".join(f"{k}-{v}" for k, v in chosen.items()) or "default"
    with open(os.path.join(args.sass_dir, f"{problem}__{tag}__{arch}{suffix}"), "w") as f:
        f.write("\n".join(lines) + "\n")


_compiled = {}  # (kernel, arch, setting, knobs) -> (cubin, JSON): register and SASS claims share


def compile_kernel(args, problem, kernel, arch, setting, knobs=None):
    """(cubin path, warpsmith's JSON) of one compile, or raises with warpsmith's message."""
    key = (kernel, arch, tuple(sorted(setting.items())), tuple(sorted((knobs or {}).items())))
    if key not in _compiled:
        _compiled[key] = _compile_kernel(args, problem, kernel, arch, setting, knobs)
    return _compiled[key]


def _compile_kernel(args, problem, kernel, arch, setting, knobs):
    cmd = warpsmith_cmd(args, "eval", problem, kernel, "--compile-only", "--arch", arch, "--json",
                        setting=setting)
    for name, value in (knobs or {}).items():
        cmd += ["--knob", f"{name}={value}"]
    # The device library of the tree under check, not of the binary's own checkout.
    env = dict(os.environ, WARPSMITH_KERNEL_LIBRARY=os.path.join(args.root, "kernels", "include"))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    try:
        out = json.loads(r.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    if r.returncode != 0 or not out.get("compile", {}).get("ok"):
        raise RuntimeError(f"{' '.join(cmd)}: {out.get('verdict')}: {out.get('message', '')[:4000]}")
    cubin = os.path.join(args.work, "ws", "cache", out["compile"]["hash"] + ".cubin")
    if not os.path.isfile(cubin):
        raise RuntimeError(f"{' '.join(cmd)}: no cubin at {cubin}")
    return cubin, out


def settings_of(root, problem):
    """Every combination of the problem's parameter values, as [{param: value}]."""
    with open(os.path.join(root, "problems", problem, "spec.json"), encoding="utf-8") as f:
        params = json.load(f).get("params", {})
    names = sorted(params)
    return [dict(zip(names, vs)) for vs in itertools.product(*(params[n]["values"] for n in names))]


def snapshot_references(args):
    if not args.sass_dir:
        print("check_sass: --references needs --sass-dir")
        return 1
    cuobjdump = find_cuobjdump(args.work)
    if not cuobjdump:
        print("check_sass: no cuobjdump: references not snapshot")
        return 1
    specs = sorted(glob.glob(os.path.join(args.root, "problems", "*", "spec.json")))
    problems = [os.path.basename(os.path.dirname(s)) for s in specs]
    problems = [p for p in problems if not args.only or p in args.only]
    failures = written = 0
    for problem in problems:
        for setting in settings_of(args.root, problem):
            for arch in ("sm_90a", "sm_100a"):
                cmd = warpsmith_cmd(args, "problems", "verify", problem, "--compile-only", "--arch",
                                    arch, setting=setting)
                r = subprocess.run(cmd, capture_output=True, text=True)
                m = re.search(r"^\s*cubin: (\S+)$", r.stdout, re.M)
                if r.returncode != 0 or not m:
                    print(f"check_sass: FAIL: {' '.join(cmd)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
                    failures += 1
                    continue
                write_sass(args, problem, setting, arch, disassemble(cuobjdump, m.group(1)),
                           ".ref.sass")
                written += 1
    print(f"check_sass: {written} reference compiles written to {args.sass_dir}; {failures} failures")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warpsmith", required=True)
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--work", default=None, help="venv and workspace folder (default: <root>/build/sass-check)")
    ap.add_argument("--only", action="append", default=[], metavar="PROBLEM",
                    help="check only these kernels (repeatable)")
    ap.add_argument("--sass-dir", default=None,
                    help="also write each compile's SASS there (PROBLEM__SETTING__ARCH.sass), to diff "
                    "a refactor's before and after")
    ap.add_argument("--references", action="store_true",
                    help="snapshot the GPU references' SASS into --sass-dir instead of checking claims")
    args = ap.parse_args()
    args.root = os.path.abspath(args.root)
    args.work = os.path.abspath(args.work or os.path.join(args.root, "build", "sass-check"))
    os.makedirs(args.work, exist_ok=True)
    require = os.environ.get("WARPSMITH_REQUIRE_SASS") == "1"

    if args.references:
        return snapshot_references(args)
    kernels = sorted(glob.glob(os.path.join(args.root, "kernels", "*", "kernel.cu")))
    if args.only:
        kernels = [k for k in kernels if os.path.basename(os.path.dirname(k)) in args.only]
        if not kernels:
            print(f"check_sass: no kernels/<problem>/kernel.cu for {' '.join(args.only)}")
            return 1
    jobs, regs_jobs, unclaimed, failures = [], [], [], []
    for kernel in kernels:
        problem = os.path.basename(os.path.dirname(kernel))
        try:
            claims = parse_claims(kernel)
            regs_claims = parse_regs_claims(kernel)
            settings = settings_of(args.root, problem)
        except (ValueError, OSError, json.JSONDecodeError) as e:
            failures.append(str(e))
            continue
        params = set(settings[0]) if settings else set()
        for arch, filters, bounds in regs_claims:
            covered = [s for s in settings if all(s.get(k) == v for k, v in filters.items())]
            unknown = [k for k in filters if k not in params]
            if unknown or not covered:
                failures.append(f"{kernel}: the regs claim for {arch} {filters} matches no "
                                "parameter setting")
            regs_jobs += [(problem, kernel, arch, s, bounds) for s in covered]
        if not any(arch == "sm_100a" for arch, _, _ in claims):
            unclaimed.append(problem)
        for arch, filters, ops in claims:
            knobs = {k: v for k, v in filters.items() if k not in params}
            covered = [s for s in settings
                       if all(s.get(k) == v for k, v in filters.items() if k in params)]
            if not covered:
                failures.append(f"{kernel}: the claim for {arch} {filters} matches no parameter setting")
            jobs += [(problem, kernel, arch, s, knobs, ops) for s in covered]
    for p in unclaimed:
        print(f"check_sass: note: kernels/{p}/kernel.cu claims nothing for sm_100a (no warpsmith:sass line)")

    for problem, kernel, arch, setting, bounds in regs_jobs:
        where = " ".join([f"kernels/{problem}/kernel.cu {arch}",
                          *(f"{k}={v}" for k, v in setting.items())])
        try:
            _, out = compile_kernel(args, problem, kernel, arch, setting)
        except RuntimeError as e:
            failures.append(f"{where}: {e}")
            continue
        broken = regs_failures(out.get("resources", []), bounds)
        if broken:
            failures.append(f"{where}: register claim broken: {'; '.join(broken)}")
        else:
            print(f"check_sass: ok: {where}: "
                  f"{' '.join(f'{k}<={v}' for k, v in bounds.items())}, no spills")

    cuobjdump = find_cuobjdump(args.work) if jobs else None
    if jobs and not cuobjdump:
        msg = "check_sass: no cuobjdump (not in CUDA's bin, and PyPI unreachable): SASS claims not checked"
        print(msg + ("; WARPSMITH_REQUIRE_SASS=1, so this fails" if require else "; skipping"))
        for f in failures:
            print(f"check_sass: FAIL: {f}")
        return 1 if require or failures else SKIP

    checked = 0
    for problem, kernel, arch, setting, knobs, claimed in jobs:
        chosen = {**setting, **knobs}
        where = f"kernels/{problem}/kernel.cu {arch} {' '.join(f'{k}={v}' for k, v in chosen.items())}"
        try:
            cubin, _ = compile_kernel(args, problem, kernel, arch, setting, knobs)
            lines = disassemble(cuobjdump, cubin)
            ops = sass_opcodes(lines, cubin)
        except RuntimeError as e:
            failures.append(f"{where}: {e}")
            continue
        if args.sass_dir:
            write_sass(args, problem, chosen, arch, lines)
        missing = [c for c in claimed if not matches(c, ops)]
        if missing:
            failures.append(f"{where}: claimed SASS instructions missing: {' '.join(missing)} "
                            f"(present: {' '.join(sorted(ops))})")
        else:
            print(f"check_sass: ok: {where}: {' '.join(claimed)}")
        checked += 1

    for f in failures:
        print(f"check_sass: FAIL: {f}")
    print(f"check_sass: {checked} compiles checked over {len(kernels)} kernels, "
          f"{len(regs_jobs)} register bounds; {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
