#!/usr/bin/env python3
"""Where a kernel's warps stall, per SASS instruction, from the source page that
`scripts/gpu_session.sh ncu` writes with NCU_REPORT=1 (`ncu --import REP --page source
--print-source sass --csv`; the SourceCounters section must have been collected).

Prints the stall reasons over all samples, the executed instructions and stall samples per
opcode, shared-memory wavefronts per load/store opcode, and the TOP instructions with the most
samples and their leading reasons. --json writes the same figures.
Usage: ncu_source.py REPORT.sass.csv [--top N] [--per UNITS] [--json OUT]
  A page of several launches: each is summarized in turn (--json: the first at the top, all in
  "kernels").
  --per UNITS: also print executed instructions per unit of work (e.g. the pipeline stages all
               CTAs ran), to compare with a count read off the SASS."""
import argparse, collections, csv, json, sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def opcode(source):
    """`@!P0 BRA 0x...` -> BRA; `LDS.128 R4, [R2]` -> LDS.128 (the width matters for wavefronts)."""
    words = [w for w in source.split() if not w.startswith("@")]
    return words[0] if words else ""


def load(path):
    """The page's kernel sections, in order: (kernel name, column names, rows). A report of several
    launches (NCU_LAUNCHES) holds one section per profiled launch, each after a kernel-name line."""
    rows = [r for r in csv.reader(open(path, errors="replace"))]
    sections, name, i = [], "", 0
    while i < len(rows):
        r = rows[i]
        if len(r) >= 2 and r[0] == "Kernel Name":
            name = r[1]
        elif "Address" in r and "Source" in r:
            names, body = r, []
            i += 1
            while i < len(rows) and len(rows[i]) == len(names):
                body.append(dict(zip(names, rows[i])))
                i += 1
            # ncu 2025 prints each profiled launch's page twice: keep one of a repeated section.
            if not sections or sections[-1] != (name, names, body):
                sections.append((name, names, body))
            continue
        i += 1
    if not sections:
        sys.exit(f"ncu_source: no source-page header (Address, Source) in {path}")
    return sections


def summarize(names, rows, top):
    stalls = [n for n in names if n.startswith("stall_") and "Not Issued" not in n]
    by_reason = collections.Counter()
    by_op = collections.defaultdict(lambda: collections.Counter())
    smem = collections.defaultdict(lambda: collections.Counter())
    for r in rows:
        op = opcode(r["Source"])
        base = op.split(".")[0]
        for s in stalls:
            by_reason[s[len("stall_"):]] += number(r[s])
        by_op[base]["executed"] += number(r.get("Instructions Executed", "0"))
        by_op[base]["samples"] += number(r.get("Warp Stall Sampling (All Samples)", "0"))
        if base in ("LDS", "STS", "LDSM", "STSM"):
            smem[op]["wavefronts"] += number(r.get("L1 Wavefronts Shared", "0"))
            smem[op]["wavefronts_ideal"] += number(r.get("L1 Wavefronts Shared Ideal", "0"))
            smem[op]["executed"] += number(r.get("Instructions Executed", "0"))
    samples = sum(by_reason.values()) or 1.0
    executed = sum(c["executed"] for c in by_op.values()) or 1.0
    ranked = sorted(rows, key=lambda r: -number(r.get("Warp Stall Sampling (All Samples)", "0")))
    hot = []
    for r in ranked[:top]:
        reasons = sorted(((number(r[s]), s[len("stall_"):]) for s in stalls), reverse=True)[:3]
        hot.append({"address": r["Address"], "source": r["Source"].strip(),
                    "samples": number(r["Warp Stall Sampling (All Samples)"]),
                    "executed": number(r.get("Instructions Executed", "0")),
                    "reasons": {k: v for v, k in reasons if v > 0}})
    return {
        "samples": samples,
        "stall_share": {k: round(v / samples, 4) for k, v in by_reason.most_common() if v > 0},
        "opcodes": {op: {"executed": c["executed"],
                         "executed_share": round(c["executed"] / executed, 4),
                         "sample_share": round(c["samples"] / samples, 4)}
                    for op, c in sorted(by_op.items(), key=lambda kv: -kv[1]["executed"])
                    if c["executed"] > 0},
        "shared_memory": {op: {"executed": c["executed"], "wavefronts": c["wavefronts"],
                               "wavefronts_ideal": c["wavefronts_ideal"]}
                          for op, c in sorted(smem.items())},
        "hot_instructions": hot,
    }


def print_summary(s, per):
    print(f"{int(s['samples'])} stall samples")
    for k, v in s["stall_share"].items():
        print(f"  {k:18s} {100 * v:5.1f}%")
    print("opcode      executed  share  samples" + ("   per unit" if per else ""))
    for op, c in list(s["opcodes"].items())[:25]:
        per_unit = f"  {c['executed'] / per:9.1f}" if per else ""
        print(f"  {op:9s} {c['executed']:11.0f} {100 * c['executed_share']:5.1f}% "
              f"{100 * c['sample_share']:5.1f}%{per_unit}")
    for op, c in s["shared_memory"].items():
        print(f"  {op:12s} wavefronts {c['wavefronts']:.0f} (ideal {c['wavefronts_ideal']:.0f}) "
              f"for {c['executed']:.0f} instructions")
    for h in s["hot_instructions"]:
        print(f"  {h['samples']:8.0f} {h['source'][:56]:56s} {h['reasons']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--per", type=float, default=0.0)
    ap.add_argument("--json")
    args = ap.parse_args()
    sections = load(args.csv)
    summaries = []
    for index, (name, names, rows) in enumerate(sections):
        s = summarize(names, rows, args.top)
        summaries.append(dict(kernel=name, section=index, **s))
        if len(sections) > 1:
            print(f"== section {index}: {name}")
        print_summary(s, args.per)
    if args.json:
        # The first section's figures at the top (one kernel, the common case), every one in
        # "kernels".
        with open(args.json, "w") as f:
            json.dump(dict(summaries[0], kernels=summaries), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
