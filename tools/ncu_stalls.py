#!/usr/bin/env python3
"""Where a kernel's warps wait, per SASS instruction, from Nsight Compute's source page.

    ncu --set full -o REPORT ...              (or any set with SourceCounters)
    ncu --import REPORT.ncu-rep --page source --print-source sass --csv > K-sass.csv
    python3 tools/ncu_stalls.py [--top 25] K-sass.csv [OTHER-sass.csv ...]

    python3 tools/ncu_stalls.py --mix OURS-sass.csv PEER-sass.csv
    python3 tools/ncu_stalls.py --by-count K-sass.csv [OTHER-sass.csv ...]
    python3 tools/ncu_stalls.py --by-opcode [--top 4] K-sass.csv [OTHER-sass.csv ...]
    python3 tools/ncu_stalls.py --find 'TRYWAIT|BAR.SYNC' K-sass.csv [OTHER-sass.csv ...]

For each table: the share of the warp-state samples per stall reason, then the instructions with
the most samples (share of all, executions, the instruction, its three largest reasons). ncu's CSV
has no column for the GMMA stall, so an HGMMA's samples can exceed its listed reasons. --mix: the
executed instructions of two tables by opcode (its first word), the largest differences first.
--by-count: the samples of each table's instructions grouped by their execution count (a key-tile
loop's instructions all run as often, a row block's as often, the producer's others), with the stall
reasons of the group that holds the most. --by-opcode: the --top groups that hold the most samples,
each group's samples by opcode with their stall reasons (shares of all samples: where a key-tile
loop's time sits, opcode by opcode, PERF_NOTES v38.1). --find: the instructions matching a regular
expression, with their execution counts and samples and the next instruction's (an mbarrier try's
wait shows on the branch after it, as long_sb). A
reading aid for PERF_NOTES (tools/gpu-host.sh ncu-pair writes these tables), not part of the build.
"""
import collections
import argparse
import csv
import re


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


def sampled(path):
    """One table's rows, its stall-reason columns and its total of samples."""
    header, rows = read_rows(path)
    reasons = [c for c in header if c.startswith("stall_") and "Not Issued" not in c]
    return rows, reasons, sum(number(r["Warp Stall Sampling (All Samples)"]) for r in rows) or 1.0


def summarize(path, top):
    rows, reasons, samples = sampled(path)
    print(f"== {path}: {len(rows)} instructions, {samples:.0f} samples")
    totals = sorted(((sum(number(r[c]) for r in rows), c[6:]) for c in reasons), reverse=True)
    print("   " + " ".join(f"{name} {value / samples:.1%}" for value, name in totals if value / samples >= 0.005))
    for r in sorted(rows, key=lambda r: -number(r["Warp Stall Sampling (All Samples)"]))[:top]:
        share = number(r["Warp Stall Sampling (All Samples)"]) / samples
        largest = sorted(((number(r[c]), c[6:]) for c in reasons), reverse=True)[:3]
        print(f"   {r['Address'][-5:]} {share:6.1%} {number(r['Instructions Executed']):>11.0f}  "
              f"{r['Source'].strip()[:64]:64s} " + " ".join(f"{n} {v / samples:.1%}" for v, n in largest if v))


def opcode_of(source):
    """An instruction's opcode without its modifiers or predicate ("" for an empty line)."""
    words = source.split()
    if not words:
        return ""
    return (words[1] if words[0].startswith("@") and len(words) > 1 else words[0]).split(".")[0]


def opcodes(path):
    counts = collections.Counter()
    for row in read_rows(path)[1]:
        op = opcode_of(row["Source"])
        if op:
            counts[op] += number(row["Instructions Executed"])
    return counts


def mix(first, second, top):
    a, b = opcodes(first), opcodes(second)
    print(f"== executed instructions: {first} {sum(a.values()) / 1e6:.2f} M, {second} {sum(b.values()) / 1e6:.2f} M")
    for op in sorted(set(a) | set(b), key=lambda k: -abs(a[k] - b[k]))[:top]:
        print(f"   {op:12s} {a[op] / 1e6:8.2f} M {b[op] / 1e6:8.2f} M  {(a[op] - b[op]) / 1e6:+8.2f} M")


def grouped(rows):
    """The rows by execution count, and each group's samples."""
    groups = collections.defaultdict(list)
    for r in rows:
        groups[int(number(r["Instructions Executed"]))].append(r)
    weight = {count: sum(number(r["Warp Stall Sampling (All Samples)"]) for r in group) for count, group in groups.items()}
    return groups, weight


def heaviest_groups(path, top, title):
    """Prints a table's header and its --top heaviest execution-count groups, each as it yields it
    (the group's rows, the stall-reason columns and the table's total of samples)."""
    rows, reasons, samples = sampled(path)
    groups, weight = grouped(rows)
    print(f"== {path}: {samples:.0f} samples, {title}")
    for count in sorted(groups, key=lambda c: -weight[c])[:top]:
        print(f"   {count:>9d} x {len(groups[count]):4d} instructions: {weight[count] / samples:6.1%} of the samples")
        yield groups[count], reasons, samples


def by_count(path, top):
    heaviest = None
    for group, reasons, samples in heaviest_groups(path, top, "by execution count"):
        heaviest = heaviest or group
    totals = sorted(((sum(number(r[c]) for r in heaviest), c[6:]) for c in reasons), reverse=True)
    print("   the heaviest group's reasons, share of all samples: " +
          " ".join(f"{name} {value / samples:.1%}" for value, name in totals if value / samples >= 0.005))


def by_opcode(path, top):
    for group, reasons, samples in heaviest_groups(path, top, "the heaviest execution-count groups by opcode"):
        ops = collections.defaultdict(lambda: collections.Counter())
        for r in group:
            op = ops[opcode_of(r["Source"])]
            op["instructions"] += 1
            op["samples"] += number(r["Warp Stall Sampling (All Samples)"])
            for c in reasons:
                op[c[6:]] += number(r[c])
        for name, op in sorted(ops.items(), key=lambda item: -item[1]["samples"])[:12]:
            parts = sorted(((v, k) for k, v in op.items() if k not in ("instructions", "samples")), reverse=True)
            print(f"      {name:12s} x{op['instructions']:4d} {op['samples'] / samples:6.1%}  " +
                  " ".join(f"{k} {v / samples:.1%}" for v, k in parts[:4] if v / samples >= 0.004))


def find(path, pattern):
    rows, _, samples = sampled(path)
    print(f"== {path}: instructions matching {pattern.pattern!r} (samples; the next instruction's)")
    for i, r in enumerate(rows):
        if not pattern.search(r["Source"]):
            continue
        after = rows[i + 1] if i + 1 < len(rows) else None
        line = (f"   {r['Address'][-5:]} {number(r['Instructions Executed']):>10.0f} x "
                f"{number(r['Warp Stall Sampling (All Samples)']) / samples:6.1%}  {r['Source'].strip()[:56]:56s}")
        if after:
            share = number(after["Warp Stall Sampling (All Samples)"]) / samples
            line += (f" | {after['Source'].strip()[:28]:28s} {share:6.1%}"
                     f" (long_sb {number(after.get('stall_long_sb', '0')) / samples:.1%},"
                     f" barrier {number(after.get('stall_barrier', '0')) / samples:.1%})")
        print(line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="+")
    parser.add_argument("--top", type=int, help="rows or groups shown (default 25; --by-opcode: 4 groups)")
    parser.add_argument("--mix", action="store_true", help="compare two tables' opcodes")
    parser.add_argument("--by-count", action="store_true", help="samples grouped by execution count")
    parser.add_argument("--by-opcode", action="store_true",
                        help="the --top heaviest execution-count groups' samples by opcode")
    parser.add_argument("--find", metavar="REGEX", help="the instructions matching REGEX and the next one's samples")
    args = parser.parse_args()
    top = args.top or (4 if args.by_opcode else 25)
    if args.find:
        for path in args.tables:
            find(path, re.compile(args.find))
        return
    if args.by_opcode:
        for path in args.tables:
            by_opcode(path, top)
        return
    if args.mix:
        if len(args.tables) != 2:
            parser.error("--mix takes two tables")
        mix(args.tables[0], args.tables[1], top)
        return
    for path in args.tables:
        (by_count if args.by_count else summarize)(path, top)


if __name__ == "__main__":
    main()
