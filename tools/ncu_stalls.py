#!/usr/bin/env python3
"""Where a kernel's warps wait, per SASS instruction, from Nsight Compute's source page.

    ncu --set full -o REPORT ...              (or any set with SourceCounters)
    ncu --import REPORT.ncu-rep --page source --print-source sass --csv > K-sass.csv
    python3 tools/ncu_stalls.py [--top 25] K-sass.csv [OTHER-sass.csv ...]

    python3 tools/ncu_stalls.py --mix OURS-sass.csv PEER-sass.csv
    python3 tools/ncu_stalls.py --by-count K-sass.csv [OTHER-sass.csv ...]

For each table: the share of the warp-state samples per stall reason, then the instructions with
the most samples (share of all, executions, the instruction, its three largest reasons). ncu's CSV
has no column for the GMMA stall, so an HGMMA's samples can exceed its listed reasons. --mix: the
executed instructions of two tables by opcode (its first word), the largest differences first.
--by-count: the samples of each table's instructions grouped by their execution count (a key-tile
loop's instructions all run as often, a row block's as often, the producer's others), with the stall
reasons of the group that holds the most. A
reading aid for PERF_NOTES (tools/gpu-host.sh ncu-pair writes these tables), not part of the build.
"""
import collections
import argparse
import csv


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def read_rows(path):
    """(header, rows as dicts) of one source-page CSV; its first line names the kernel."""
    with open(path, newline="") as f:
        table = list(csv.reader(f))
    header = table[1]
    return header, [dict(zip(header, line)) for line in table[2:] if len(line) == len(header)]


def summarize(path, top):
    header, rows = read_rows(path)
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


def opcodes(path):
    counts = collections.Counter()
    for row in read_rows(path)[1]:
        words = row["Source"].split()
        if not words:
            continue
        op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
        counts[op.split(".")[0]] += number(row["Instructions Executed"])
    return counts


def mix(first, second, top):
    a, b = opcodes(first), opcodes(second)
    print(f"== executed instructions: {first} {sum(a.values()) / 1e6:.2f} M, {second} {sum(b.values()) / 1e6:.2f} M")
    for op in sorted(set(a) | set(b), key=lambda k: -abs(a[k] - b[k]))[:top]:
        print(f"   {op:12s} {a[op] / 1e6:8.2f} M {b[op] / 1e6:8.2f} M  {(a[op] - b[op]) / 1e6:+8.2f} M")


def by_count(path, top):
    header, rows = read_rows(path)
    reasons = [c for c in header if c.startswith("stall_") and "Not Issued" not in c]
    samples = sum(number(r["Warp Stall Sampling (All Samples)"]) for r in rows) or 1.0
    groups = collections.defaultdict(list)
    for r in rows:
        groups[int(number(r["Instructions Executed"]))].append(r)
    weight = {count: sum(number(r["Warp Stall Sampling (All Samples)"]) for r in group) for count, group in groups.items()}
    print(f"== {path}: {samples:.0f} samples, by execution count")
    for count in sorted(groups, key=lambda c: -weight[c])[:top]:
        print(f"   {count:>9d} x {len(groups[count]):4d} instructions: {weight[count] / samples:6.1%} of the samples")
    heaviest = groups[max(groups, key=lambda c: weight[c])]
    totals = sorted(((sum(number(r[c]) for r in heaviest), c[6:]) for c in reasons), reverse=True)
    print("   the heaviest group's reasons, share of all samples: " +
          " ".join(f"{name} {value / samples:.1%}" for value, name in totals if value / samples >= 0.005))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="+")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--mix", action="store_true", help="compare two tables' opcodes")
    parser.add_argument("--by-count", action="store_true", help="samples grouped by execution count")
    args = parser.parse_args()
    if args.mix:
        if len(args.tables) != 2:
            parser.error("--mix takes two tables")
        mix(args.tables[0], args.tables[1], args.top)
        return
    for path in args.tables:
        (by_count if args.by_count else summarize)(path, args.top)


if __name__ == "__main__":
    main()
