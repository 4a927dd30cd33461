"""Speed of an FP8 KV cache (issue 15): decode with e4m3 K/V against our own 16-bit decode, in one
process, on one set of tensors per row (tools/bench.py's decode rows set that one against cuDNN).

Each row draws q, k, v in the 16-bit dtype, quantizes k and v to e4m3 with per-(batch, K/V head)
scales (tools/check.py's quantize_e4m3), and times:
  - ours on the e4m3 cache with its scales (the FP8 decode kernel),
  - ours on the 16-bit k, v (the decode kernel as it was).
The FP8 output is compared with ours on the dequantized K/V in 16 bits (relative max error, as a
sanity check: the correctness rule is tools/check.py --kv-dtype e4m3). Rates are GB/s of K+V bytes read (the cache's own size: half for e4m3) and their share of
this GPU's copy bandwidth measured in the same run. Times are medians (tools/bench.py's measure_ms).
The issue asks the FP8 decode at B64 Hq32 Hkv8 Sk 8k D128 to run >= 1.8x faster than our 16-bit one.

With --prefill: prefill on an FP8 cache (chunked prefill on a long prefix, and a square causal
prefill), ours on the e4m3 cache (the selector's kernel) against the reference kernel on it (the
path before the sm80 kernel took FP8), the sm80 kernel and the selector's on the dequantized K/V in
q's dtype, same tensors.

    python3 tools/bench_fp8kv.py
    python3 tools/bench_fp8kv.py --json fp8kv.json --dtypes bf16
    python3 tools/bench_fp8kv.py --prefill
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (measure_ms, copy_gbps, collect_metadata; it imports flashcore)
import check  # noqa: E402  (quantize_e4m3)

flashcore = bench.flashcore

# (batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim): the row first, then BENCH.md's
# other decode shape, GQA 4 at head_dim 64 and 256, and a few query rows (speculative decoding).
ROWS = (
    (64, 32, 8, 1, 8192, 128),
    (8, 32, 8, 1, 32768, 128),
    (64, 32, 8, 1, 8192, 64),
    (16, 32, 8, 1, 8192, 256),
    (8, 32, 8, 4, 16384, 128),
)
TARGET = 1.8   # FP8 over 16-bit, the first row
# (batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim), causal: chunked prefill (512 queries on a
# 16k prefix) at head_dim 128, 64 and 256, and a square prefill
PREFILL_ROWS = (
    (1, 512, 16896, 32, 8, 128),
    (2, 4096, 4096, 16, 16, 128),
    (1, 512, 16896, 32, 8, 64),
    (1, 512, 16896, 16, 8, 256),
)


def run_prefill(device, dtype):
    """The --prefill rows: ours on the FP8 cache against the reference kernel on it, and the sm80
    and the selector's kernels on the dequantized cache in q's dtype."""
    import torch

    print(f"{'shape (causal)':<34}{'fp8':>9}{'ref fp8':>10}{'sm80 16':>9}{'sel 16':>9}  kernels", flush=True)
    rows = []
    for (batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim) in PREFILL_ROWS:
        q = torch.randn(batch, seqlen_q, heads_q, head_dim, dtype=dtype, device="cuda")
        k, v = (torch.randn(batch, seqlen_k, heads_kv, head_dim, dtype=dtype, device="cuda") for _ in range(2))
        (k8, k_scale, k_exact), (v8, v_scale, v_exact) = check.quantize_e4m3(k), check.quantize_e4m3(v)
        scales = dict(k_descale=k_scale, v_descale=v_scale)
        entry = {"dtype": str(dtype).split(".")[-1], "batch": batch, "seqlen_q": seqlen_q, "seqlen_k": seqlen_k,
                 "heads_q": heads_q, "heads_kv": heads_kv, "head_dim": head_dim, "causal": True}
        runs = (("fp8", None, k8, v8, scales), ("reference_fp8", "reference", k8, v8, scales),
                ("sm80_16", "sm80", k_exact.to(dtype), v_exact.to(dtype), {}),
                ("selected_16", None, k_exact.to(dtype), v_exact.to(dtype), {}))
        for name, force, kk, vv, extra in runs:
            with check.forced_context(device, force) as context:
                call = context.prepare(q, kk, vv, causal=True, **extra)
                call()
                torch.cuda.synchronize()
                entry[name] = {"ms": bench.measure_ms(call), "kernel": context.plan(q, kk, vv, causal=True)[0]}
        rows.append(entry)
        print(f"B{batch} Sq{seqlen_q} Sk{seqlen_k} Hq{heads_q} Hkv{heads_kv} D{head_dim}".ljust(34)
              + "".join(f"{entry[name]['ms'] * 1e3:>{w}.1f}" for name, w in
                        (("fp8", 9), ("reference_fp8", 10), ("sm80_16", 9), ("selected_16", 9)))
              + f"  {entry['fp8']['kernel']}, {entry['selected_16']['kernel']}", flush=True)
        torch.cuda.empty_cache()
    return rows


def paged(tensor, page_size, order):
    """tensor [B, S, H, D] in shuffled pages of page_size ([pages, page_size, H, D]: page order[i]
    holds the i-th page of the sequences in order), moved as bytes (float8 has no index_put)."""
    import torch

    batch, seqlen, heads, dim = tensor.shape
    per_seq = -(-seqlen // page_size)
    raw = tensor.view(torch.uint8) if tensor.element_size() == 1 else tensor.view(torch.int16)
    padded = torch.zeros(batch, per_seq * page_size, heads, dim * tensor.element_size() // raw.element_size(),
                         dtype=raw.dtype, device=tensor.device)
    padded[:, :seqlen] = raw
    cache = torch.empty_like(padded.view(batch * per_seq, page_size, heads, -1))
    cache[order] = padded.view(batch * per_seq, page_size, heads, -1)
    return cache.view(tensor.dtype)


def relative_error(got, expected):
    return ((got.float() - expected.float()).abs().max() / expected.float().abs().max()).item()


def run_row(context, fp8_context, dtype, row, copy_gbps, page_size=0):
    import torch

    batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim = row
    q = torch.randn(batch, seqlen_q, heads_q, head_dim, dtype=dtype, device="cuda")
    k = torch.randn(batch, seqlen_k, heads_kv, head_dim, dtype=dtype, device="cuda")
    v = torch.randn_like(k)
    (k8, k_scale, k_exact), (v8, v_scale, v_exact) = check.quantize_e4m3(k), check.quantize_e4m3(v)
    entry = {"dtype": str(dtype).split(".")[-1], "batch": batch, "heads_q": heads_q, "heads_kv": heads_kv,
             "seqlen_q": seqlen_q, "seqlen_k": seqlen_k, "head_dim": head_dim}
    options = {}
    if page_size:   # the same keys in shuffled pages, for both caches
        per_seq = -(-seqlen_k // page_size)
        order = torch.randperm(batch * per_seq, device="cuda")
        options = dict(page_table=order.view(batch, per_seq).to(torch.int32),
                       seqused_k=torch.full((batch,), seqlen_k, dtype=torch.int32, device="cuda"))
        k8, v8, k, v = (paged(t, page_size, order) for t in (k8, v8, k, v))
        entry["page_size"] = page_size
    fp8 = fp8_context.prepare(q, k8, v8, k_descale=k_scale, v_descale=v_scale, **options)
    fp8()
    plain = context.prepare(q, k, v, **options)
    plain()
    deq = context.prepare(q, k_exact.to(dtype), v_exact.to(dtype)) if not page_size else plain
    deq()
    torch.cuda.synchronize()
    entry["kernel_fp8"], _, entry["splits_fp8"] = fp8_context.plan(q, k8, v8, **options)
    entry["kernel_16"] = context.plan(q, k, v, **options)[0]
    entry["fp8_vs_dequantized_rel_err"] = relative_error(fp8.out, deq.out)
    elements = 2 * batch * seqlen_k * heads_kv * head_dim
    for name, fn, bytes_per in (("fp8", fp8, 1), ("ours_16", plain, 2)):
        ms = bench.measure_ms(fn)
        gbps = elements * bytes_per / ms / 1e6
        entry[name] = {"ms": ms, "gbps": gbps, "copy_share": gbps / copy_gbps}
    entry["fp8_speedup_over_ours_16"] = entry["ours_16"]["ms"] / entry["fp8"]["ms"]
    return entry


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtypes", default="bf16,f16", help="q's dtypes (default bf16,f16)")
    parser.add_argument("--json", metavar="PATH", help="write the rows and the run's metadata here")
    parser.add_argument("--force-fp8", metavar="VARIANT",
                        help="FC_FORCE_VARIANT for the FP8 calls only (a tile study), e.g. decode:n256w8s2")
    parser.add_argument("--page-size", type=int, default=0,
                        help="both caches paged (shuffled pages of this many tokens); the FP8 output is "
                             "then compared with the 16-bit one, not with the dequantized cache")
    parser.add_argument("--prefill", action="store_true",
                        help="prefill on an FP8 cache (PREFILL_ROWS) instead of decode")
    parser.add_argument("--rows", type=lambda text: [int(x) for x in text.split(",")],
                        help="indices of the rows to run (default all)")
    args = parser.parse_args(argv)
    import torch

    dtypes = [{"bf16": torch.bfloat16, "f16": torch.float16}[name] for name in args.dtypes.split(",")]
    torch.manual_seed(0)
    copy = bench.copy_gbps()
    meta = bench.collect_metadata(torch.cuda.current_device(), with_ours=True)
    print(f"{meta.get('gpu', torch.cuda.get_device_name())}, torch {torch.__version__}, "
          f"copy {copy:.0f} GB/s", flush=True)
    rows = []
    device = torch.cuda.current_device()
    if args.prefill:
        rows = [row for dtype in dtypes for row in run_prefill(device, dtype)]
        if args.json:
            Path(args.json).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
        return 0
    print(f"{'dtype':<9}{'B':>4}{'Hq':>4}{'Hkv':>4}{'Sq':>3}{'Sk':>7}{'D':>5}  {'fp8 us':>8}{'GB/s':>7}"
          f"{'%copy':>6}  {'16-bit us':>9}{'%copy':>6}  {'x16':>6}  err",
          flush=True)
    chosen = [ROWS[i] for i in args.rows] if args.rows else ROWS
    with flashcore.Context(device) as context, check.forced_context(device, args.force_fp8) as fp8_context:
        for dtype in dtypes:
            for row in chosen:
                entry = run_row(context, fp8_context, dtype, row, copy, args.page_size)
                entry["forced_fp8"] = args.force_fp8
                rows.append(entry)
                print(f"{entry['dtype']:<9}{row[0]:>4}{row[1]:>4}{row[2]:>4}{row[3]:>3}{row[4]:>7}{row[5]:>5}  "
                      f"{entry['fp8']['ms'] * 1e3:>8.1f}{entry['fp8']['gbps']:>7.0f}"
                      f"{100 * entry['fp8']['copy_share']:>5.0f}%  {entry['ours_16']['ms'] * 1e3:>9.1f}"
                      f"{100 * entry['ours_16']['copy_share']:>5.0f}%  "
                      f"{entry['fp8_speedup_over_ours_16']:>5.2f}x  "
                      f"{entry['fp8_vs_dequantized_rel_err']:.1e}  {entry['kernel_fp8']} k{entry['splits_fp8']}",
                      flush=True)
                torch.cuda.empty_cache()
    first = [r for r in rows if (r["batch"], r["heads_q"], r["heads_kv"], r["seqlen_q"], r["seqlen_k"],
                                 r["head_dim"]) == ROWS[0]]
    for r in first:
        verdict = "meets" if r["fp8_speedup_over_ours_16"] >= TARGET else "misses"
        print(f"B64 Hq32 Hkv8 Sk8k D128 {r['dtype']}: FP8 {r['fp8_speedup_over_ours_16']:.2f}x our 16-bit "
              f"decode ({verdict} the issue's {TARGET}x)", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, "copy_gbps": copy, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
