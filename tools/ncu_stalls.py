#!/usr/bin/env python3
"""Where a kernel's warps wait, per SASS instruction, from Nsight Compute's source page.

    ncu --set full -o REPORT ...              (or any set with SourceCounters)
    ncu --import REPORT.ncu-rep --page source --print-source sass --csv > K-sass.csv
    python3 tools/ncu_stalls.py [--top 25] K-sass.csv [OTHER-sass.csv ...]

For each table: the share of the warp-state samples per stall reason, then the instructions with
the most samples (share of all, executions, the instruction, its three largest reasons). ncu's CSV
has no column for the GMMA stall, so an HGMMA's samples can exceed its listed reasons. A reading aid
for PERF_NOTES (tools/gpu-host.sh ncu-pair writes these tables), not part of the build.
"""
import argparse
import csv


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def summarize(path, top):
    with open(path, newline="") as f:
        table = list(csv.reader(f))
    header = table[1]   # the first line names the kernel
    rows = [dict(zip(header, line)) for line in table[2:] if len(line) == len(header)]
    reasons = [c for c in header if c.startswith("stall_") and "Not Issued" not in c]
    samples = sum(number(r["Warp Stall Sampling (All Samples)"]) for r in rows) or 1.0
    print(f"== {path}: {len(rows)} instructions, {samples:.0f} samples")
    totals = sorted(((sum(number(r[c]) for r in rows), c[6:]) for c in reasons), reverse=True)
    print("   " + " ".join(f"{name} {value / samples:.1%}" for value, name in totals if value / samples >= 0.005))
    for r in sorted(rows, key=lambda r: -number(r["Warp Stall Sampling (All Samples)"]))[:top]:
        share = number(r["Warp Stall Sampling (All Samples)"]) / samples
        largest = sorted(((number(r[c]), c[6:]) for c in reasons), reverse=True)[:3]
        print(f"   {r['Address'][-5:]} {share:6.1%} {number(r['Instructions Executed']):>11.0f}  "
              f"{r['Source'].strip()[:64]:64s} " + " ".join(f"{n} {v / samples:.1%}" for v, n in largest if v))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="+")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    for path in args.tables:
        summarize(path, args.top)


if __name__ == "__main__":
    main()
