#!/usr/bin/env python3
"""The sweep queue (kernels/sweeps.txt): knob variants waiting for a GPU, one line per problem and
setting set, in the order to run them.

Usage: sweep_queue.py check [FILE]   every line names a problem with a hand-tuned kernel, parameter
                                     settings of its spec, and knobs its plan declares with values
                                     the plan allows (exit 1 with each fault otherwise)
       sweep_queue.py compile WARPSMITH [FILE]
                                     compiles every queued variant in every setting of its line
                                     for sm_90a and sm_100a (`eval --compile-only`, no GPU): a
                                     variant that does not build fails here, not on device time
       sweep_queue.py list [FILE]    one tab-separated line per entry for scripts/gpu_session.sh:
                                     problem, settings, variants (';'-separated), hidden (0 or 1),
                                     the bench-shape filter ('-': none)

OPTIONS: 'hidden' (the hidden shapes too), 'where EXPR' (only the bench shapes where EXPR holds:
`warpsmith eval --bench-where`), or both, 'hidden' first.
"""
import json, os, re, subprocess, sys, tempfile

FUNCTIONS = {"ceil_div", "round_up", "min", "max"}

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DEFAULT = os.path.normpath(os.path.join(ROOT, "kernels", "sweeps.txt"))


def parse(path):
    """[(line number, problem, [setting], [variant], hidden, where)]; raises ValueError on bad
    syntax."""
    entries = []
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            fields = [x.strip() for x in line.split("|")]
            if len(fields) != 4:
                raise ValueError(f"{path}:{n}: want PROBLEM | SETTINGS | VARIANTS | OPTIONS")
            problem, settings, variants, options = fields
            m = re.fullmatch(r"(hidden)?\s*(?:where\s+(.+))?", options)
            if not m or (m.group(1) is None and m.group(2) is None and options):
                raise ValueError(f"{path}:{n}: unknown option '{options}' "
                                 "(only 'hidden' and 'where EXPR')")
            hidden, where = m.group(1) is not None, (m.group(2) or "").strip()
            sets = settings.split()
            if sets == ["-"]:
                sets = []
            vs = [" ".join(v.split()) for v in variants.split(";") if v.strip()]
            if not problem or not vs:
                raise ValueError(f"{path}:{n}: a problem and at least one variant are needed")
            entries.append((n, problem, sets, vs, hidden, where))
    return entries


def plan_knobs(problem):
    with open(os.path.join(ROOT, "kernels", problem, "kernel.cu")) as f:
        src = f.read()
    return json.loads(src.split("warpsmith:plan", 1)[1].split("*/", 1)[0]).get("knobs", {})


def check(path):
    faults = []
    try:
        entries = parse(path)
    except ValueError as e:
        return [str(e)]
    for n, problem, sets, variants, _, bench in entries:
        where = f"{path}:{n}"
        spec_path = os.path.join(ROOT, "problems", problem, "spec.json")
        if not os.path.isfile(spec_path) or not os.path.isfile(
                os.path.join(ROOT, "kernels", problem, "kernel.cu")):
            faults.append(f"{where}: no problem with a hand-tuned kernel named '{problem}'")
            continue
        spec = json.load(open(spec_path))
        params = spec.get("params", {})
        names = set(spec.get("symbols", [])) | set(params) | FUNCTIONS
        for name in re.findall(r"[A-Za-z_]\w*", bench):
            if name not in names:
                faults.append(f"{path}:{n}: '{name}' in the bench filter is no symbol or "
                              f"parameter of {problem}")
        for s in sets:
            for pair in s.split("+"):
                name, _, value = pair.partition("=")
                if name not in params or value not in params[name]["values"]:
                    faults.append(f"{where}: '{pair}' is not a parameter setting of {problem}")
        knobs = plan_knobs(problem)
        for v in variants:
            for kv in v.split():
                name, _, value = kv.partition("=")
                if name not in knobs:
                    faults.append(f"{where}: {problem}'s plan declares no knob {name}")
                elif not value.lstrip("-").isdigit() or int(value) not in knobs[name]:
                    faults.append(f"{where}: {name}={value} is not one of {knobs[name]}")
                elif int(value) == knobs[name][0] and len(v.split()) == 1:
                    faults.append(f"{where}: {kv} is {problem}'s default: the control measures it")
    return faults


ARCHS = ("sm_90a", "sm_100a")


def compile_all(warpsmith, path):
    """Compiles each (entry, setting, variant, arch) once; returns the failures' messages."""
    faults = check(path)
    if faults:
        return faults
    env = dict(os.environ, WARPSMITH_KERNEL_LIBRARY=os.path.join(ROOT, "kernels", "include"))
    count = 0
    with tempfile.TemporaryDirectory(prefix="sweep_queue_") as workspace:
        for n, problem, sets, variants, _, _ in parse(path):
            for setting in sets or [""]:
                set_args = [a for pair in setting.split("+") if pair for a in ("--set", pair)]
                for v in variants:
                    knob_args = [a for kv in v.split() for a in ("--knob", kv)]
                    for arch in ARCHS:
                        cmd = [warpsmith, "--workspace", workspace, "--problems-dir",
                               os.path.join(ROOT, "problems"), "eval", problem,
                               os.path.join(ROOT, "kernels", problem, "kernel.cu"),
                               "--compile-only", "--arch", arch] + set_args + knob_args
                        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
                        count += 1
                        if r.returncode != 0:
                            tail = (r.stdout + r.stderr).strip().splitlines()[-6:]
                            faults.append(f"{path}:{n}: {problem} [{setting or '-'}] {v} {arch}: "
                                          f"exit {r.returncode}\n    " + "\n    ".join(tail))
    print(f"sweep_queue: {count} compiles of {path}, {len(faults)} failed")
    return faults


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("check", "list", "compile"):
        sys.exit(__doc__)
    if sys.argv[1] == "compile":
        if len(sys.argv) < 3:
            sys.exit(__doc__)
        faults = compile_all(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else DEFAULT)
        for f in faults:
            print(f)
        return 1 if faults else 0
    path = sys.argv[2] if len(sys.argv) > 2 else DEFAULT
    if sys.argv[1] == "check":
        faults = check(path)
        for f in faults:
            print(f)
        print(f"sweep_queue: {len(parse(path)) if not faults else 'faults in'} {path}"
              + ("" if faults else " entries, all valid"))
        return 1 if faults else 0
    for _, problem, sets, variants, hidden, where in parse(path):
        print("\t".join([problem, " ".join(sets) or "-", ";".join(variants), "1" if hidden else "0",
                         where or "-"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
