#!/usr/bin/env python3
"""A/B of two FlashCore builds (or kernel caches) on BENCH.md's rows, timed in alternation.

    python3 tools/ab_rounds.py --baseline-lib OTHER/libflashcore.so [--rounds 5] [--labels sweep,gqa]
    python3 tools/ab_rounds.py --baseline-db EMPTY.db ...       # this library on another cache
    python3 tools/ab_rounds.py --baseline-templates OLD/kernel_templates --softcap 30 ...
    python3 tools/ab_rounds.py --ours-templates NEW/kernel_templates --dtypes e4m3 --dims 64

bench.py --baseline-lib times ours, then the baseline, once each per row: the clock and temperature
drift between the two timings of a row moved identical kernels by up to 5% on an H100 (PERF_NOTES
v23.5). Here each row's tensors are made once, the two are checked against each other, then timed
in turn (ours, baseline, ours, ...) for --rounds rounds with bench.py's measure_ms, and the row's
ratio is the median of the rounds' (baseline time / ours): above 1, ours is faster. Each row also says
whether the two outputs are equal bit for bit (for a change meant to keep every bit). The summary is
the geometric mean of the rows' ratios, overall and by head_dim, and the spread of the identical-
kernel rows (the same kernel name with --baseline-db alone; with --baseline-lib, names matching
--noise-kernels, whose code the change left as it was, e.g. by their PTX): the noise floor of the run.
--dtypes e4m3: FP8 attention's rows (bench_fp8.py's form): bf16 N(0, 1) tensors quantized to e4m3
with a descale per (batch, K/V head), amax / 448 (check.e4m3_inputs), out bf16.
A measurement tool for PERF_NOTES, not part of the build; peers are not timed (bench.py does that).
"""
import argparse
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (its problems, measure_ms and comparisons; it imports flashcore)
import check  # noqa: E402  (e4m3_inputs)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-lib", metavar="PATH", help="the other libflashcore.so")
    parser.add_argument("--baseline-db", metavar="PATH", help="the baseline's kernel cache file")
    parser.add_argument("--baseline-templates", metavar="DIR",
                        help="FC_TEMPLATE_DIR for the baseline: this library compiling other kernel sources")
    parser.add_argument("--ours-templates", metavar="DIR",
                        help="FC_TEMPLATE_DIR for ours: a changed kernel-template folder against this library's own")
    parser.add_argument("--rounds", type=int, default=5, help="alternations per row (default 5)")
    parser.add_argument("--labels", default="sweep", help="bench.py's row labels (default sweep)")
    parser.add_argument("--dtypes", default="f16,bf16", help="f16, bf16, e4m3 (FP8 attention, out bf16)")
    parser.add_argument("--dims", default="64,128,256")
    parser.add_argument("--causal", choices=("both", "yes", "no"), default="both")
    parser.add_argument("--seqlens", default=",".join(str(s) for s in bench.SWEEP_SEQLENS),
                        help="the sweep rows' sequence lengths (default all)")
    parser.add_argument("--ours-variant", metavar="V", help="FC_FORCE_VARIANT for ours (e.g. sm90:m192n128s2w16p1)")
    parser.add_argument("--baseline-variant", metavar="V", help="FC_FORCE_VARIANT for the baseline")
    parser.add_argument("--softcap", type=float, help="both sides' calls soft-cap their logits at this value")
    parser.add_argument("--noise-kernels", metavar="REGEX",
                        help="kernels the two builds share unchanged (a regular expression on the name): "
                             "their rows give the noise floor")
    parser.add_argument("--json", metavar="PATH", help="write the rows here")
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args(argv)
    if not (args.baseline_lib or args.baseline_db or args.baseline_templates or args.ours_templates
            or args.ours_variant or args.baseline_variant):
        parser.error("give --baseline-lib, --baseline-db, --baseline-templates, --ours-templates or a forced "
                     "variant: something to compare with")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    unknown = set(args.dtypes.split(",")) - {"f16", "bf16", "e4m3"}
    if unknown:
        parser.error(f"--dtypes takes f16, bf16 and e4m3, not {', '.join(sorted(unknown))}")
    return args


def row_tensors(problem, device):
    """q, k, v of a row and the call's descales ({} for 16-bit rows): an e4m3 row's are bf16 N(0, 1)
    tensors quantized per (batch, K/V head)."""
    import torch

    if problem.dtype != "e4m3":
        return (*bench.problem_tensors(problem, device), {})
    codes, scales = check.e4m3_inputs(*bench.problem_tensors(problem._replace(dtype="bf16"), device),
                                      problem.heads_kv)
    torch.cuda.empty_cache()   # the bf16 originals are gone
    return (*codes, scales)


def main(argv=None):
    args = parse_args(argv)
    import torch

    torch.cuda.set_device(args.device)
    device = torch.device("cuda", args.device)
    causal_modes = {"both": (False, True), "yes": (True,), "no": (False,)}[args.causal]
    problems = bench.build_problems([int(d) for d in args.dims.split(",")], args.dtypes.split(","),
                                    causal_modes, [int(s) for s in args.seqlens.split(",")], True)
    problems = [p for p in problems if p.label in args.labels.split(",")]
    ours = bench.make_context(args.device, {"FC_FORCE_VARIANT": args.ours_variant,
                                            "FC_TEMPLATE_DIR": args.ours_templates})
    options = {"library": args.baseline_lib} if args.baseline_lib else {}
    if args.baseline_db:
        options["cache_path"] = args.baseline_db
    base = bench.make_context(args.device, {"FC_FORCE_VARIANT": args.baseline_variant,
                                            "FC_TEMPLATE_DIR": args.baseline_templates}, **options)
    extra = {} if args.softcap is None else {"softcap": args.softcap}   # both sides' call options
    rows = []
    try:
        for index, p in enumerate(problems):
            q, k, v, scales = row_tensors(p, device)
            launches = []
            for context in (ours, base):
                out = torch.empty(q.shape, dtype=torch.bfloat16 if scales else q.dtype, device=device)
                launch = context.prepare(q, k, v, causal=p.causal, out=out, **extra, **scales)
                launch()
                launches.append(launch)
            torch.cuda.synchronize(device)
            agreement = bench.match(launches[0].out, launches[1].out)
            bitwise = bool(torch.equal(launches[0].out, launches[1].out))   # a change meant to keep every bit
            kernels = [context.plan(q, k, v, causal=p.causal, **extra)[0] for context in (ours, base)]
            times = bench.alternated({"ours": launches[0], "baseline": launches[1]}, args.rounds)
            ratios = bench.round_ratios(times["baseline"], times["ours"])
            row = {**p._asdict(), "kernels": kernels, "check": agreement, "bitwise": bitwise, "ours_ms": times["ours"],
                   "baseline_ms": times["baseline"],
                   "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
                   # one library: the same name is the same kernel; two: only the names --noise-kernels gives
                   "identical": kernels[0] == kernels[1] and (
                       bool(re.search(args.noise_kernels, kernels[0])) if args.noise_kernels
                       else not (args.baseline_lib or args.baseline_templates or args.ours_templates))}
            rows.append(row)
            print(f"[{index + 1}/{len(problems)}] {p.describe()}: ours {statistics.median(times['ours']):.4f} ms "
                  f"baseline {statistics.median(times['baseline']):.4f} ms, baseline / ours {row['ratio']:.3f} "
                  f"({row['ratio_min']:.3f}-{row['ratio_max']:.3f}), {kernels[0]}"
                  f"{'' if kernels[0] == kernels[1] else ' vs ' + kernels[1]}, check {agreement['check']}"
                  f"{', bitwise equal' if bitwise else ''}", flush=True)
            del q, k, v, launches
            torch.cuda.empty_cache()
    finally:
        ours.close()
        base.close()
    ratio_geomean = bench.geomean(r["ratio"] for r in rows)
    print(f"\nbaseline time / ours, median of {args.rounds} alternations a row: geometric mean "
          f"{ratio_geomean:.4f} over {len(rows)} rows")
    for head_dim in sorted({r["head_dim"] for r in rows}):
        picked = [r["ratio"] for r in rows if r["head_dim"] == head_dim]
        print(f"  head_dim {head_dim}: {bench.geomean(picked):.4f} ({len(picked)} rows, "
              f"{min(picked):.3f}-{max(picked):.3f})")
    same = [r["ratio"] for r in rows if r["identical"]]
    if same:
        print(f"  rows with the same kernel on both sides: {bench.geomean(same):.4f} ({len(same)} rows, "
              f"{min(same):.3f}-{max(same):.3f}): the noise floor")
    print(f"  rows whose two outputs are equal bit for bit: {sum(r['bitwise'] for r in rows)} of {len(rows)}")
    bad = [r for r in rows if r["check"]["check"] != "ok"]
    if bad:
        print(f"  {len(bad)} rows whose outputs differ beyond bench.py's tolerance")
    if args.json:
        Path(args.json).write_text(json.dumps({"rounds": args.rounds, "baseline_lib": args.baseline_lib,
                                               "baseline_db": args.baseline_db,
                                               "baseline_templates": args.baseline_templates,
                                               "ours_templates": args.ours_templates, "softcap": args.softcap,
                                               "geomean": ratio_geomean,
                                               "rows": rows}, indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
