"""Speed of sliding windows, attention sinks and logit softcap (issue 14), as shared/BENCH.md asks.

Three measurements, each on one set of tensors per row, in one process, every peer's output
compared with ours before it is timed ("MISMATCH" otherwise):

1. window: B1 H16 D128, a 32k causal sequence, window_left 4096 against full causal (the same
   family, tiles and switches but the window's), beside cuDNN's full causal and its window
   (cudnn-frontend: diagonal band, bottom-right aligned). The issue asks for >= 6x; the script
   also prints the ratio of the (query, key) pairs the two compute, which bounds what skipping
   tiles can give.
2. overhead: BENCH.md's FA3 sweep shapes (16k tokens, hidden 2048; head_dim 64/128/256; causal
   and not), ours with sinks and with softcap 30 against ours without. The issue asks sinks <= 3%,
   softcap <= 10% "against the same kernel without them": where the capped call's tiles differ from
   the plain call's (the Hopper kernel keeps a softcap on 128-key tiles where the plain call takes
   192), the plain call is also timed forced onto the capped call's tiles, and the softcap's cost
   against that is reported beside ("same tiles").
3. peers at the overhead shapes: cuDNN with its sink_token against ours with sinks, and
   FlashAttention-3 (fa3-fwd, bf16) with softcap against ours with softcap, and without one
   against itself (its own softcap cost), where they import; FA3's full causal beside the window
   row (this build has no sliding window).

    python3 tools/bench_masks.py                      # all three, f16 and bf16
    python3 tools/bench_masks.py --quick              # d128, 4k and 16k, f16: a few minutes
    python3 tools/bench_masks.py --json masks.json    # the rows as JSON too
    python3 tools/bench_masks.py --only overhead --dtypes bf16 --dims 64,128

Times are medians (tools/bench.py's measure_ms: triton's do_bench, L2 flushed between launches).
Ratios: peer time / our time (above 1: we are faster); overheads: time with / time without - 1, where
ours with and without an option are timed in alternation --rounds times (default 3) and the overhead
is the median of the rounds' ratios (a single pair of timings moved identical kernels by up to 5% on
an H100, PERF_NOTES v23.5; sinks are a run-time input of the same kernel).
"""
import argparse
import json
import math
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (its measure_ms, metadata and sweep constants; it imports flashcore)

flashcore = bench.flashcore

WINDOW_SHAPE = dict(batch=1, heads=16, seqlen=32768, head_dim=128)
WINDOW_LEFT = 4096
SOFTCAP = 30.0
SINKS_LIMIT, SOFTCAP_LIMIT, WINDOW_TARGET = 0.03, 0.10, 6.0


def torch_dtype(name):
    import torch

    return {"f16": torch.float16, "bf16": torch.bfloat16}[name]


def tensors(dtype, batch, heads, seqlen, head_dim):
    import torch

    q, k, v = (torch.randn(batch, seqlen, heads, head_dim, dtype=torch_dtype(dtype), device="cuda")
               for _ in range(3))
    sinks = torch.randn(heads, dtype=torch.float32, device="cuda")
    return q, k, v, sinks


def ours(context, q, k, v, **options):
    """(launch, out, kernel) of our call with the options, launched once; launch is what is timed."""
    import torch

    launch = context.prepare(q, k, v, out=torch.empty_like(q), **options)
    launch()
    torch.cuda.synchronize()
    plan_options = {key: value for key, value in options.items() if key != "sinks"}
    return launch, launch.out, context.plan(q, k, v, **plan_options)[0]


def visible_pairs(seqlen, left):
    """(query, key) pairs a causal problem of seqlen rows computes, with window_left `left` (-1: all)."""
    if left < 0:
        return seqlen * (seqlen + 1) // 2
    full = min(seqlen, left + 1)
    return full * (full + 1) // 2 + (seqlen - full) * (left + 1)


_cudnn_handle = None


def cudnn_attention(q, k, v, causal, window_left=-1, sinks=None):
    """(call, out) of cuDNN's SDPA through cudnn-frontend's graph API on BSHD tensors: bottom-right
    aligned diagonal band (its left bound counts the diagonal: window_left + 1), sink_token
    [1, Hq, 1, 1] fp32. Raises if cudnn-frontend or the graph is not there."""
    import cudnn
    import torch

    global _cudnn_handle
    if _cudnn_handle is None:
        _cudnn_handle = cudnn.create_handle()
    cudnn.set_stream(handle=_cudnn_handle, stream=torch.cuda.current_stream().cuda_stream)
    io_type = {torch.float16: cudnn.data_type.HALF, torch.bfloat16: cudnn.data_type.BFLOAT16}[q.dtype]
    graph = cudnn.pygraph(io_data_type=io_type, intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT, handle=_cudnn_handle)
    out = torch.empty_like(q)
    views = {name: t.transpose(1, 2) for name, t in (("q", q), ("k", k), ("v", v), ("o", out))}
    nodes = {name: graph.tensor_like(views[name]) for name in ("q", "k", "v")}
    options = dict(name="sdpa", q=nodes["q"], k=nodes["k"], v=nodes["v"], generate_stats=False,
                   attn_scale=1.0 / math.sqrt(q.shape[-1]),
                   diagonal_alignment=cudnn.diagonal_alignment.BOTTOM_RIGHT)
    if causal:
        options["diagonal_band_right_bound"] = 0
    if window_left >= 0:
        options["diagonal_band_left_bound"] = window_left + 1
    if sinks is not None:
        views["sinks"] = sinks.view(1, -1, 1, 1)
        nodes["sinks"] = graph.tensor_like(views["sinks"])
        options["sink_token"] = nodes["sinks"]
    o, _ = graph.sdpa(**options)
    o.set_output(True).set_dim(list(views["o"].shape)).set_stride(list(views["o"].stride()))
    nodes["o"] = o
    graph.validate()
    graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    graph.check_support()
    graph.build_plans()
    workspace = torch.empty(graph.get_workspace_size(), dtype=torch.uint8, device=q.device)
    pack = {nodes[name]: views[name] for name in nodes}

    def call():
        graph.execute(pack, workspace, handle=_cudnn_handle)

    call()
    torch.cuda.synchronize()
    return call, out


def fa3_softcap(q, k, v, causal, softcap):
    """(call, out) of FlashAttention-3 (fa3-fwd, bf16 only) with softcap; raises if absent."""
    call = bench.fa3_call(q, k, v, causal=causal, softcap=softcap)
    return call, call()


def fa3_causal(q, k, v):
    """(call, out) of FlashAttention-3 (fa3-fwd, bf16 only), causal; raises if absent."""
    call = bench.fa3_call(q, k, v, causal=True)
    return call, call()


def peer_entry(make, our_out):
    """A peer's {"ms", "check"} (or {"error"}): built by make() -> (call, out), checked, timed."""
    try:
        call, out = make()
    except Exception as error:   # a peer that cannot run this (not installed, unsupported) says why
        return {"error": bench.first_line(error)}
    entry = bench.match(our_out, out)
    entry["ms"] = bench.measure_ms(call)
    return entry


def window_rows(context, dtypes):
    """Measurement 1: the 32k causal window against full causal, ours and cuDNN's."""
    rows = []
    s = WINDOW_SHAPE
    pairs = visible_pairs(s["seqlen"], -1) / visible_pairs(s["seqlen"], WINDOW_LEFT)
    for dtype in dtypes:
        q, k, v, _ = tensors(dtype, s["batch"], s["heads"], s["seqlen"], s["head_dim"])
        full, full_out, full_kernel = ours(context, q, k, v, causal=True)
        window, window_out, window_kernel = ours(context, q, k, v, causal=True, window=(WINDOW_LEFT, -1))
        row = {"measurement": "window", "dtype": dtype, **s, "window_left": WINDOW_LEFT,
               "ours_full_ms": bench.measure_ms(full), "ours_window_ms": bench.measure_ms(window),
               "kernels": [full_kernel, window_kernel], "pair_ratio": pairs}
        row["speedup"] = row["ours_full_ms"] / row["ours_window_ms"]
        row["cudnn_full"] = peer_entry(lambda: cudnn_attention(q, k, v, True), full_out)
        row["cudnn_window"] = peer_entry(lambda: cudnn_attention(q, k, v, True, WINDOW_LEFT), window_out)
        if dtype == "bf16":   # FA3 full causal beside ours (fa3-fwd 0.0.3 raises on a sliding window)
            row["fa3_full"] = peer_entry(lambda: fa3_causal(q, k, v), full_out)
        rows.append(row)
        del q, k, v
    return rows


def forced_tiles(kernel):
    """FC_FORCE_VARIANT for a Hopper kernel's tiles, from its name (sm90_bf16_d128_cap_m128n128s2w12p_sm_90a ->
    sm90:m128n128s2w12p1); None for another family's."""
    match = re.fullmatch(r"sm90_.*_m(\d+)n(\d+)s(\d+)w(\d+)(p?)_sm_\w+", kernel)
    if not match:
        return None
    m, n, s, w, pingpong = match.groups()
    return f"sm90:m{m}n{n}s{s}w{w}p{1 if pingpong else 0}"


def uncapped_name(kernel):
    """The name of a capped kernel's variant without the softcap switch."""
    return kernel.replace("_cap_", "_", 1)


def overhead(with_ms, without_ms):
    """The median over the rounds of (time with / time without), less 1."""
    return statistics.median(bench.round_ratios(with_ms, without_ms)) - 1


def overhead_rows(context, dtypes, dims, seqlens, with_peers, forced_context, rounds=1):
    """Measurements 2 and 3: sinks and softcap against the same kernel without, and the peers.
    forced_context(force): a context with FC_FORCE_VARIANT=force (for the same-tiles plain call).
    rounds: ours with and without each option timed in alternation that many times."""
    rows = []
    for dtype in dtypes:
        for head_dim in dims:
            heads = bench.SWEEP_HIDDEN // head_dim
            for seqlen in seqlens:
                for causal in (False, True):
                    q, k, v, sinks = tensors(dtype, bench.SWEEP_TOKENS // seqlen, heads, seqlen, head_dim)
                    plain, plain_out, kernel = ours(context, q, k, v, causal=causal)
                    with_sinks, sinks_out, _ = ours(context, q, k, v, causal=causal, sinks=sinks)
                    capped, capped_out, capped_kernel = ours(context, q, k, v, causal=causal, softcap=SOFTCAP)
                    launches = {"plain": plain, "sinks": with_sinks, "softcap": capped}
                    force = forced_tiles(capped_kernel)
                    if uncapped_name(capped_kernel) != kernel and force:
                        same, _, same_kernel = ours(forced_context(force), q, k, v, causal=causal)
                        if same_kernel == uncapped_name(capped_kernel):
                            launches["same_tiles"] = same
                    times = bench.alternated(launches, rounds)
                    row = {"measurement": "overhead", "dtype": dtype, "head_dim": head_dim, "heads": heads,
                           "batch": bench.SWEEP_TOKENS // seqlen, "seqlen": seqlen, "causal": causal,
                           "kernels": [kernel, capped_kernel], "rounds": rounds,
                           **{f"{name}_ms": statistics.median(ms) for name, ms in times.items()},
                           **{f"{name}_round_ms": ms for name, ms in times.items()}}
                    row["sinks_overhead"] = overhead(times["sinks"], times["plain"])
                    row["softcap_overhead"] = overhead(times["softcap"], times["plain"])
                    if "same_tiles" in times:
                        row["same_tiles_kernel"] = same_kernel
                        row["softcap_overhead_same_tiles"] = overhead(times["softcap"], times["same_tiles"])
                    if with_peers:
                        row["cudnn_sinks"] = peer_entry(lambda: cudnn_attention(q, k, v, causal, sinks=sinks),
                                                        sinks_out)
                        if dtype == "bf16":   # and FA3's own softcap cost: its time without one
                            row["fa3_softcap"] = peer_entry(lambda: fa3_softcap(q, k, v, causal, SOFTCAP),
                                                            capped_out)
                            row["fa3_plain"] = peer_entry(lambda: fa3_softcap(q, k, v, causal, 0.0), plain_out)
                    rows.append(row)
                    print(f"[{len(rows)}] {dtype} d{head_dim} s{seqlen}{' causal' if causal else ''}: plain "
                          f"{row['plain_ms']:.3f} ms, sinks {row['sinks_overhead']:+.1%}, softcap "
                          f"{row['softcap_overhead']:+.1%}", flush=True)   # progress: the table comes last
                    del q, k, v, sinks
    return rows


def peer_text(entry, our_ms):
    if "error" in entry:
        return f"- ({entry['error'][:40]})"
    flag = "" if entry["check"] == "ok" else f" {entry['check']}"
    return f"{entry['ms']:.3f} ms ({entry['ms'] / our_ms:.2f}x){flag}"


def print_rows(rows):
    for row in rows:
        if row["measurement"] == "window":
            verdict = "meets" if row["speedup"] >= WINDOW_TARGET else "below"
            print(f"window {row['dtype']} B{row['batch']} H{row['heads']} S{row['seqlen']} D{row['head_dim']} "
                  f"causal, left {row['window_left']}: full {row['ours_full_ms']:.3f} ms, window "
                  f"{row['ours_window_ms']:.3f} ms, {row['speedup']:.2f}x ({verdict} the {WINDOW_TARGET:g}x "
                  f"target; pairs {row['pair_ratio']:.2f}x); cuDNN full "
                  f"{peer_text(row['cudnn_full'], row['ours_full_ms'])}, window "
                  f"{peer_text(row['cudnn_window'], row['ours_window_ms'])}"
                  + (f"; FA3 full {peer_text(row['fa3_full'], row['ours_full_ms'])}" if "fa3_full" in row else ""))
            for peer in ("cudnn", "fa3"):
                full, window = row.get(peer + "_full", {}), row.get(peer + "_window", {})
                if "ms" in full and "ms" in window:
                    print(f"  {peer}'s own window speedup: {full['ms'] / window['ms']:.2f}x")
            continue
        print(f"{row['dtype']:<4} d{row['head_dim']:<3} S{row['seqlen']:<5} {'causal' if row['causal'] else 'full  '} "
              f"plain {row['plain_ms']:.3f} ms  sinks {row['sinks_overhead']:+.1%}"
              f"{'' if row['sinks_overhead'] <= SINKS_LIMIT else ' (over 3%)'}  softcap "
              f"{row['softcap_overhead']:+.1%}{'' if row['softcap_overhead'] <= SOFTCAP_LIMIT else ' (over 10%)'}"
              + (f" (same tiles {row['softcap_overhead_same_tiles']:+.1%})" if "softcap_overhead_same_tiles" in row
                 else "")
              + (f"  cuDNN sinks {peer_text(row['cudnn_sinks'], row['sinks_ms'])}" if "cudnn_sinks" in row else "")
              + (f"  FA3 softcap {peer_text(row['fa3_softcap'], row['softcap_ms'])}" if "fa3_softcap" in row else "")
              + (f" (FA3's own softcap cost {fa3_overhead(row):+.1%})" if fa3_overhead(row) is not None else ""))


def fa3_overhead(row):
    """FlashAttention-3's time with the softcap over its time without, less 1; None if not both."""
    capped, plain = row.get("fa3_softcap", {}), row.get("fa3_plain", {})
    return capped["ms"] / plain["ms"] - 1 if "ms" in capped and "ms" in plain else None


def summary(rows):
    overheads = [row for row in rows if row["measurement"] == "overhead"]
    if overheads:
        for key, limit in (("sinks_overhead", SINKS_LIMIT), ("softcap_overhead", SOFTCAP_LIMIT)):
            values = sorted(row[key] for row in overheads)
            over = sum(value > limit for value in values)
            print(f"{key}: median {values[len(values) // 2]:+.1%}, max {values[-1]:+.1%}, "
                  f"{over} of {len(values)} rows over {limit:.0%}")
        same = sorted(row.get("softcap_overhead_same_tiles", row["softcap_overhead"]) for row in overheads)
        print(f"softcap_overhead against the same tiles (where they differ): median {same[len(same) // 2]:+.1%}, "
              f"max {same[-1]:+.1%}, {sum(value > SOFTCAP_LIMIT for value in same)} of {len(same)} rows over "
              f"{SOFTCAP_LIMIT:.0%}")
        fa3 = sorted(value for value in map(fa3_overhead, overheads) if value is not None)
        if fa3:
            print(f"FA3's own softcap_overhead: median {fa3[len(fa3) // 2]:+.1%}, max {fa3[-1]:+.1%} "
                  f"over {len(fa3)} rows")
        for key in ("cudnn_sinks", "fa3_softcap"):
            ratios = [row[key]["ms"] / row[key.split("_")[1] + "_ms"] for row in overheads
                      if key in row and "ms" in row[key]]
            if ratios:
                print(f"{key}: peer time / ours, geometric mean {bench.geomean(ratios):.3f} over {len(ratios)} "
                      "rows")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="f16, head_dim 128, 4k and 16k")
    parser.add_argument("--only", choices=("window", "overhead"), help="one measurement")
    parser.add_argument("--no-peers", action="store_true", help="ours only")
    parser.add_argument("--dims", help="head dims of the overhead rows, e.g. 64,128 (default 64,128,256)")
    parser.add_argument("--dtypes", help="f16 and/or bf16 (default both; --quick: f16)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="overhead: ours with and without each option timed in alternation this many "
                             "times, each overhead the median of the rounds' ratios (default 3)")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--json", metavar="PATH", help="write the rows and the metadata here")
    args = parser.parse_args(argv)
    if args.dtypes and not set(args.dtypes.split(",")) <= set(bench.DTYPE_NAMES):
        parser.error(f"--dtypes: f16 and/or bf16, not {args.dtypes}")
    if args.dims and not all(d.isdigit() for d in args.dims.split(",")):
        parser.error(f"--dims: head dims separated by commas, not {args.dims}")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    import torch

    torch.cuda.set_device(args.device)
    torch.manual_seed(0)
    dtypes = args.dtypes.split(",") if args.dtypes else ("f16",) if args.quick else bench.DTYPE_NAMES
    dims = [int(d) for d in args.dims.split(",")] if args.dims else (128,) if args.quick else bench.HEAD_DIMS
    seqlens = (4096, 16384) if args.quick else bench.SWEEP_SEQLENS
    metadata = bench.collect_metadata(args.device, True)
    print(json.dumps(metadata), flush=True)
    rows = []
    forced = {}   # FC_FORCE_VARIANT value -> its context, made on first use

    def forced_context(force):
        if force not in forced:
            forced[force] = bench.make_context(args.device, {"FC_FORCE_VARIANT": force})
        return forced[force]

    with flashcore.Context(args.device) as context:
        try:
            if args.only in (None, "window"):
                rows += window_rows(context, dtypes)
            if args.only in (None, "overhead"):
                rows += overhead_rows(context, dtypes, dims, seqlens, not args.no_peers, forced_context,
                                      args.rounds)
        finally:
            for other in forced.values():
                other.close()
    print_rows(rows)
    summary(rows)
    if args.json:
        Path(args.json).write_text(json.dumps({"metadata": metadata, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
