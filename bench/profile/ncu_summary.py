#!/usr/bin/env python3
"""One line per profiled kernel launch from an `ncu --csv` report: launch id, kernel, and each
metric as name=value (units as ncu gives them). Usage: ncu_summary.py REPORT.csv"""
import collections, csv, sys


def main():
    rows = [r for r in csv.reader(open(sys.argv[1], errors="replace")) if len(r) > 10]
    if not rows or "Metric Name" not in rows[0]:
        print(f"ncu_summary: no ncu rows in {sys.argv[1]} (see the .err file beside it)")
        return 1
    ix = {h: i for i, h in enumerate(rows[0])}
    launches = collections.OrderedDict()
    for r in rows[1:]:  # one row per (launch, metric)
        key = (r[ix["ID"]], r[ix["Kernel Name"]][:48])
        unit = r[ix["Metric Unit"]] if "Metric Unit" in ix else ""
        launches.setdefault(key, []).append(f"{r[ix['Metric Name']]}={r[ix['Metric Value']]}{unit}")
    for (lid, name), metrics in launches.items():
        print(f"{lid} {name}: " + "; ".join(metrics))
    return 0


if __name__ == "__main__":
    sys.exit(main())
