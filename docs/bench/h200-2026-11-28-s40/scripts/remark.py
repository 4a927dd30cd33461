#!/usr/bin/env python3
"""Session 40: the H200's winners marked again from its measurements (run3/tune-all.tsv) by the rule of
`fcjit tune` after v40.2 (the heuristic's choice named without V transposed ahead): per bucket, the
heuristic's choice (`fcjit --json tune --dry-run`, the fixed tuner's) if it passed and is within 2% of
the fastest candidate that passed, else that fastest one; the winners as `fcjit cache export --winners`
writes them. The same SQL rule as fc_tuning_mark_winner, done here because re-marking needs no GPU but
`fcjit tune` opens one. Usage: remark.py FCJIT TUNE_ALL.TSV > winners.tsv"""
import json
import os
import subprocess
import sys
import tempfile

fcjit, results = sys.argv[1], sys.argv[2]
env = dict(os.environ, FC_TUNING_DB=os.path.join(tempfile.mkdtemp(), "db"))
plan = json.loads(subprocess.run([fcjit, "--json", "tune", "--dry-run"], env=env, check=True,
                                 capture_output=True, text=True).stdout)
heuristic = {b["bucket"]: b["heuristic"] for b in plan["plan"]}
header, rows = [], {}
for line in open(results):
    if line.startswith("#"):
        header.append(line.replace("(fcjit cache export)", "(fcjit cache export, winners re-marked by remark.py)"))
        continue
    fields = line.rstrip("\n").split("\t")
    rows.setdefault(fields[4], []).append(fields)
sys.stdout.write("".join(header))
changed = 0
for bucket in sorted(rows):
    passed = [r for r in rows[bucket] if r[8] == "1"]
    fastest = min(passed, key=lambda r: float(r[6]))
    incumbent = [r for r in passed if r[5] == heuristic[bucket] and float(r[6]) <= 1.02 * float(fastest[6])]
    winner = incumbent[0] if incumbent else fastest
    was = [r for r in rows[bucket] if r[9] == "1"][0]
    if was[5] != winner[5]:
        changed += 1
        print(f"{bucket}: {was[5]} -> {winner[5]}", file=sys.stderr)
    sys.stdout.write("\t".join(winner[:9] + ["1"] + winner[10:]) + "\n")
print(f"{len(rows)} buckets, {changed} winners changed", file=sys.stderr)
