"""Speed and accuracy of FP8 attention (q, k and v e4m3: FlashAttention-3's fp8 forward form)
against FlashAttention-3's fp8 and cuDNN's fp8, and against our own bf16, as shared/BENCH.md asks.

Each row of the 16k-token sweep (batch * seqlen = 16384, hidden 2048: heads = 2048 // head_dim, as
bench.py's: 10 at head_dim 192)
draws q, k, v in bf16 and quantizes them to e4m3, descale = amax / 448 (per (batch, K/V head), q's
over that head's query heads; or per tensor). In one process, on those tensors, it times:
  - ours fp8: FlashCore on the e4m3 tensors with per-(batch, head) descales, out bf16;
  - FA3 fp8: fa3_fwd_interface.flash_attn_func on the same e4m3 tensors and descales (out bf16);
  - cuDNN fp8: cudnn-frontend's sdpa_fp8 graph on the per-tensor e4m3 tensors (its only form); on
    Hopper its output is e4m3 too, with a per-tensor scale (scale_s 448; scale_o from V's amax);
  - ours bf16: FlashCore on the bf16 originals.
Times are medians of triton's do_bench with the L2 flushed between launches (tools/bench.py's
measure_ms); with --rounds N each row's calls are timed N times in turn (tools/bench.py's alternated),
each time the median of its rounds and each ratio the median of the rounds' ratios, so that the
clock's drift under the board's power limit reaches every call alike. TFLOP/s count 4 B H S^2 D, halved for causal. Ratios are time / our fp8 time (above 1:
ours is faster): for each fp8 peer, for the faster of the two ("best"), and for our bf16, with their
geometric means per head_dim. A peer that is not installed, or fails, is skipped with a note.

Accuracy: relative RMSE, ||out - ref|| / ||ref||, against attention in fp32 on the ORIGINAL bf16
tensors: ours, FA3 fp8 and cuDNN fp8 on the same per-tensor e4m3 tensors (the fair comparison),
ours and FA3 on the per-(batch, head) ones, and our bf16. Each output is checked against the
reference (a relative RMSE under CHECK_RMSE) before it is timed: "MISMATCH" otherwise.

--outliers X (> 1) multiplies every 16th dimension of q and k, from 3, by X: outlier channels, for
every column. --rotate adds, per row, our FP8 attention's relative RMSE with q, k and v quantized by
flashcore.quantize_fp8 per (batch, head), q and k without the rotation (ours/Q, "ours_fp8_quant") and
with it (ours/R, "ours_fp8_rot": the seeded Hadamard rotation of src/flashcore.h, q and k alike, v
never), and the time of flashcore.quantize_fp8 on q without and with the rotation (median of the op's
calls, host overhead included; GB/s count (2 + 1) bytes per element, the 16-bit read and the e4m3
write, over that time).

    python3 tools/bench_fp8.py                       # d64/d128/d256, S 512..16384, causal and not
    python3 tools/bench_fp8.py --quick               # d64/d128 at S 1k/4k/16k
    python3 tools/bench_fp8.py --dims 128 --seqlens 4096,16384 --causal yes --json fp8.json
    python3 tools/bench_fp8.py --rounds 3 --no-accuracy   # each row's calls timed 3 times in turn
    python3 tools/bench_fp8.py --quick --rotate --outliers 30   # what the rotation buys on outliers

Prints progress, then the speed table, the geometric means and the accuracy table.
"""
import argparse
import importlib.metadata
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (measure_ms, fa3_call, collect_metadata, nvidia_smi; it imports flashcore)
import check  # noqa: E402  (e4m3_inputs)

flashcore = bench.flashcore

SWEEP_TOKENS = bench.SWEEP_TOKENS
SWEEP_HIDDEN = bench.SWEEP_HIDDEN
SWEEP_SEQLENS = bench.SWEEP_SEQLENS
QUICK_SEQLENS = bench.QUICK_SEQLENS
HEAD_DIMS = bench.HEAD_DIMS
QUICK_HEAD_DIMS = bench.QUICK_HEAD_DIMS

E4M3_MAX = check.E4M3_MAX
CUDNN_SCALE_S = E4M3_MAX   # P in [0, 1] onto e4m3's range (../shared/PEERS.md)
# |out| <= max |v|: cuDNN's e4m3 output keeps that bound at half of e4m3's range (its P's rounding may
# push an average a little past max |v|; the halved range costs no precision above e4m3's normals).
CUDNN_OUT_HEADROOM = 0.5
CHECK_RMSE = {"fp8": 0.15, "bf16": 0.02}   # relative RMSE above which an output is a MISMATCH
REFERENCE_CHUNK_ELEMENTS = 1 << 28          # fp32 scores computed at once (1 GiB)
PEERS = ("fa3_fp8", "cudnn_fp8")
TIMED = ("ours_fp8",) + PEERS + ("ours_bf16",)
OUTLIER_EVERY, OUTLIER_FIRST = 16, 3   # --outliers: dimensions 3, 19, 35, ... (src/check_quantize.c's)
QUANTIZE_BYTES = 2 + 1                 # per element: the 16-bit read and the e4m3 write


def flops(batch, heads, seqlen, head_dim, causal):
    total = 4 * batch * heads * seqlen * seqlen * head_dim
    return total // 2 if causal else total


def reference_fp32(q, k, v, causal):
    """Attention in fp32 (no TF32) of bf16 q, k, v [B, S, H, D] (H equal for all three): out fp32
    [B, S, H, D], by chunks of heads and query rows (causal: bottom-right, Sq = Sk here)."""
    import torch

    batch, seqlen_q, heads, dim = q.shape
    seqlen_k = k.shape[1]
    scale = 1.0 / math.sqrt(dim)
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    rows = max(1, min(seqlen_q, REFERENCE_CHUNK_ELEMENTS // seqlen_k))
    hidden = ~check.visible_keys(seqlen_q, seqlen_k, True, q.device) if causal else None   # [Sq, Sk]
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for b in range(batch):
            for h in range(heads):
                kh, vh = k[b, :, h].float(), v[b, :, h].float()                    # (Sk, D)
                for first in range(0, seqlen_q, rows):
                    qh = q[b, first:first + rows, h].float()                       # (rows, D)
                    scores = torch.matmul(qh, kh.t()).mul_(scale)                  # (rows, Sk)
                    if hidden is not None:
                        scores.masked_fill_(hidden[first:first + rows], -math.inf)
                    out[b, first:first + rows, h] = torch.matmul(torch.softmax(scores, dim=-1), vh)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    return out


def relative_rmse(out, ref):
    """||out - ref|| / ||ref|| over all elements, accumulated in fp64."""
    diff = (out.double() - ref.double()).pow_(2).sum()
    return math.sqrt(diff.item() / ref.double().pow(2).sum().item())


def first_line(error):
    return bench.first_line(error) or type(error).__name__


class CudnnFp8:
    """cuDNN's fp8 attention through cudnn-frontend's sdpa_fp8 graph (../shared/PEERS.md), built once
    for one problem: per-tensor e4m3 q, k, v in BSHD memory (given to cuDNN as [B, H, S, D] dims
    with BSHD strides), out e4m3 with scale_o (Hopper writes fp8), on torch's current stream. Calling
    it launches once and returns its e4m3 output; dequantized() gives that output in fp32."""

    def __init__(self, cudnn, handle, q8, k8, v8, descales, causal):
        import torch

        self._cudnn, self._handle = cudnn, handle
        e4m3, fp32 = cudnn.data_type.FP8_E4M3, cudnn.data_type.FLOAT
        graph = cudnn.pygraph(io_data_type=e4m3, intermediate_data_type=fp32, compute_data_type=fp32,
                              handle=handle)

        def bhsd(name, x):   # [B, H, S, D] dims over x's [B, S, H, D] memory
            batch, seqlen, heads, dim = x.shape
            return graph.tensor(name=name, dim=(batch, heads, seqlen, dim),
                                stride=(x.stride(0), x.stride(2), x.stride(1), x.stride(3)), data_type=e4m3)

        self.out = torch.empty(q8.shape, dtype=torch.float8_e4m3fn, device=q8.device)
        inputs = {name: bhsd(name, x) for name, x in (("q", q8), ("k", k8), ("v", v8))}
        scalar_names = ("descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o")
        scalars = {name: graph.tensor(name=name, dim=(1, 1, 1, 1), stride=(1, 1, 1, 1), data_type=fp32)
                   for name in scalar_names}
        # NOTE: Sq = Sk in this sweep, so cuDNN's top-left causal mask is ours (bottom-right);
        # amax_s stays virtual (declaring it an output restricts cuDNN to its backend engines).
        o, _, _, amax_o = graph.sdpa_fp8(q=inputs["q"], k=inputs["k"], v=inputs["v"], **scalars,
                                         generate_stats=False, attn_scale=1.0 / math.sqrt(q8.shape[-1]),
                                         use_causal_mask=bool(causal), name="sdpa_fp8")
        batch, seqlen, heads, dim = q8.shape
        o.set_output(True).set_dim((batch, heads, seqlen, dim)).set_stride(
            (self.out.stride(0), self.out.stride(2), self.out.stride(1), 1)).set_data_type(e4m3)
        amax_o.set_output(True).set_dim((1, 1, 1, 1)).set_stride((1, 1, 1, 1)).set_data_type(fp32)
        graph.validate()
        graph.build_operation_graph()
        graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        graph.check_support()
        graph.build_plans()
        self._workspace = torch.empty(max(1, graph.get_workspace_size()), dtype=torch.uint8,
                                      device=q8.device)

        def scalar(value):
            return value.reshape(-1)[:1].reshape(1, 1, 1, 1).float().contiguous()

        dq, dk, dv = (scalar(d) for d in descales)
        self.scale_o = CUDNN_OUT_HEADROOM / dv
        values = {"descale_q": dq, "descale_k": dk, "descale_v": dv,
                  "descale_s": torch.full_like(dq, 1.0 / CUDNN_SCALE_S),
                  "scale_s": torch.full_like(dq, CUDNN_SCALE_S), "scale_o": self.scale_o}
        self._pack = {inputs["q"]: q8, inputs["k"]: k8, inputs["v"]: v8, o: self.out,
                      amax_o: torch.empty_like(dq)}
        self._pack.update({scalars[name]: values[name] for name in scalar_names})
        self._graph = graph
        cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream(q8.device).cuda_stream)

    def __call__(self):
        self._graph.execute(self._pack, self._workspace, handle=self._handle)
        return self.out

    def dequantized(self):
        return self.out.float() / self.scale_o.reshape(())


def cudnn_module():
    """(cudnn, handle), or (None, reason) where cudnn-frontend is not installed or has no GPU."""
    try:
        import cudnn
    except (ImportError, OSError) as error:
        return None, f"nvidia-cudnn-frontend not installed ({first_line(error)}; ../shared/PEERS.md)"
    try:
        return cudnn, cudnn.create_handle()
    except Exception as error:   # noqa: BLE001  (a peer never stops the benchmark)
        return None, f"cudnn.create_handle failed: {first_line(error)}"


def timed_entry(fn, output, ref, kind, flop_count):
    """{ms, tflops, rel_rmse, check} of a callable whose first output (already computed) is
    `output`, checked against ref before it is timed."""
    rmse = relative_rmse(output, ref)
    entry = {"rel_rmse": rmse, "check": "ok" if rmse < CHECK_RMSE[kind] else "MISMATCH"}
    entry["ms"] = bench.measure_ms(fn)
    entry["tflops"] = flop_count / entry["ms"] / 1e9
    return entry


def rotation_accuracy(context, q, k, v, ref, causal):
    """{ours_fp8_quant, ours_fp8_rot}: the relative RMSE of our FP8 attention on q, k and v quantized
    by flashcore.quantize_fp8 per (batch, head), q and k without and with the rotation (v never)."""
    v8, dv = flashcore.quantize_fp8(v)
    accuracy = {}
    for name, rotate in (("ours_fp8_quant", False), ("ours_fp8_rot", True)):
        (q8, dq), (k8, dk) = (flashcore.quantize_fp8(x, rotate=rotate) for x in (q, k))
        out = context.attention(q8, k8, v8, causal=causal, q_descale=dq, k_descale=dk, v_descale=dv)
        accuracy[name] = relative_rmse(out, ref)
    return accuracy


def quantize_timing(x):
    """{plain, rotated}: flashcore.quantize_fp8 of x per (batch, head), without and with the rotation:
    {ms, gbps}, the median time of the op's calls and QUANTIZE_BYTES per element over it."""
    import torch

    timings = {}
    for name, rotate in (("plain", False), ("rotated", True)):
        def call(rotate=rotate):
            return flashcore.quantize_fp8(x, rotate=rotate)

        call()
        torch.cuda.synchronize(x.device)
        ms = bench.measure_ms(call)
        timings[name] = {"ms": ms, "gbps": QUANTIZE_BYTES * x.numel() / ms / 1e6}
    return timings


def run_row(context, cudnn, handle, head_dim, seqlen, causal, device, with_accuracy=True, rotate=False,
            outliers=0.0, rounds=1):
    """One row: the timings of TIMED and the accuracy of each implementation (see the docstring);
    with rotate, the rotation's accuracy and quantize_fp8's time too; outliers > 1: q and k's
    outlier dimensions times that."""
    import torch

    batch, heads = SWEEP_TOKENS // seqlen, SWEEP_HIDDEN // head_dim
    flop_count = flops(batch, heads, seqlen, head_dim, causal)
    row = {"head_dim": head_dim, "batch": batch, "seqlen": seqlen, "heads": heads, "causal": causal,
           "flops": flop_count, "results": {}, "accuracy": {}}
    results, accuracy = row["results"], row["accuracy"]
    calls = {}   # the timed calls by name, for the later rounds: (call, None), bench.later_rounds' form
    q, k, v = (torch.randn(batch, seqlen, heads, head_dim, dtype=torch.bfloat16, device=device)
               for _ in range(3))
    if outliers > 1:
        for x in (q, k):
            x[..., OUTLIER_FIRST::OUTLIER_EVERY] *= outliers
    ref = reference_fp32(q, k, v, causal)
    if rotate:   # quantize_fp8 and the rotation (before the peers, whose failures never stop a row)
        try:
            accuracy.update(rotation_accuracy(context, q, k, v, ref, causal))
            row["quantize"] = quantize_timing(q)
        except flashcore.FlashCoreError as error:
            row["quantize"] = {"error": first_line(error)}
    # e4m3 codes of q, k and v, and their float32 [B, H] descales by name
    head_codes, head_scales = check.e4m3_inputs(q, k, v, heads)
    tensor_codes, tensor_scales = check.e4m3_inputs(q, k, v, heads, per_tensor=True)

    # ours, fp8 (per-head scales: timed) and bf16
    try:
        call = context.prepare(*head_codes, causal=causal, **head_scales)
        call()
        torch.cuda.synchronize(device)
        results["ours_fp8"] = timed_entry(call, call.out, ref, "fp8", flop_count)
        calls["ours_fp8"] = (call, None)
        results["ours_fp8"]["kernel"] = context.plan(*head_codes, causal=causal)[0]
        if with_accuracy:
            accuracy["ours_fp8_head"] = results["ours_fp8"]["rel_rmse"]
            accuracy["ours_fp8_tensor"] = relative_rmse(
                context.attention(*tensor_codes, causal=causal, **tensor_scales), ref)
    except flashcore.FlashCoreError as error:
        results["ours_fp8"] = {"error": first_line(error)}
    try:
        call = context.prepare(q, k, v, causal=causal)
        call()
        torch.cuda.synchronize(device)
        results["ours_bf16"] = timed_entry(call, call.out, ref, "bf16", flop_count)
        calls["ours_bf16"] = (call, None)
        results["ours_bf16"]["kernel"] = context.plan(q, k, v, causal=causal)[0]
        accuracy["ours_bf16"] = results["ours_bf16"]["rel_rmse"]
    except flashcore.FlashCoreError as error:
        results["ours_bf16"] = {"error": first_line(error)}

    # FA3 fp8 (per-head scales: timed; per-tensor: accuracy)
    try:
        call = bench.fa3_call(*head_codes, causal=causal, **head_scales)
        results["fa3_fp8"] = timed_entry(call, call(), ref, "fp8", flop_count)
        calls["fa3_fp8"] = (call, None)
        if with_accuracy:
            accuracy["fa3_fp8_head"] = results["fa3_fp8"]["rel_rmse"]
            accuracy["fa3_fp8_tensor"] = relative_rmse(
                bench.fa3_call(*tensor_codes, causal=causal, **tensor_scales)(), ref)
    except ImportError as error:
        results["fa3_fp8"] = {"error": f"fa3-fwd not installed ({first_line(error)}; ../shared/PEERS.md)"}
    except Exception as error:   # noqa: BLE001  (a peer never stops the benchmark)
        results["fa3_fp8"] = {"error": first_line(error)}

    # cuDNN fp8 (per-tensor scales, its only form: timed and accuracy)
    if cudnn is None:
        results["cudnn_fp8"] = {"error": handle}
    else:
        try:
            graph = CudnnFp8(cudnn, handle, *tensor_codes, [tensor_scales[f"{name}_descale"] for name in "qkv"], causal)
            graph()
            torch.cuda.synchronize(device)
            results["cudnn_fp8"] = timed_entry(graph, graph.dequantized(), ref, "fp8", flop_count)
            calls["cudnn_fp8"] = (graph, None)
            accuracy["cudnn_fp8_tensor"] = results["cudnn_fp8"]["rel_rmse"]
        except Exception as error:   # noqa: BLE001  (a peer never stops the benchmark)
            results["cudnn_fp8"] = {"error": first_line(error)}

    # rounds 2 to `rounds`: every timed call again, in turn (bench.later_rounds): each time the median
    # of its rounds, each ratio the median of the rounds' ratios
    times = bench.later_rounds(results, calls, rounds)
    for name in times:
        results[name]["tflops"] = flop_count / results[name]["ms"] / 1e9
    row["rounds"] = rounds
    ours = times.get("ours_fp8")
    row["ratios"] = {name: bench.round_ratio(times, name, over="ours_fp8") for name in PEERS + ("ours_bf16",)}
    peers = [name for name in PEERS if name in times]
    row["ratios"]["best_fp8_peer"] = (statistics.median(
        min(times[name][i] for name in peers) / ours[i] for i in range(len(ours))) if peers and ours else None)
    row["best_fp8_peer"] = min(peers, key=lambda name: results[name]["ms"], default=None)
    return row


def format_entry(entry):
    if "ms" not in entry:
        return "n/a"
    return f"{entry['ms'] * 1e3:8.1f} us {entry['tflops']:6.0f}"


def format_ratio(ratio):
    return "-" if ratio is None else f"{ratio:.3f}x"


SPEED_COLUMNS = (("D", 4), ("B", 3), ("S", 6), ("causal", 6), ("ours fp8 us TF/s", 19),
                 ("FA3 fp8", 19), ("cuDNN fp8", 19), ("ours bf16", 19), ("fa3/o", 7), ("cudnn/o", 8),
                 ("best/o", 7), ("bf16/o", 7), ("check", 9))


def speed_lines(rows):
    lines = ["  ".join(f"{title:>{width}}" for title, width in SPEED_COLUMNS)]
    for row in rows:
        results, ratios = row["results"], row["ratios"]
        checks = [f"{name.split('_')[0]}:{results[name]['check']}" for name in TIMED
                  if results[name].get("check", "ok") != "ok"]
        cells = [row["head_dim"], row["batch"], row["seqlen"], "yes" if row["causal"] else "no",
                 *(format_entry(results[name]) for name in TIMED),
                 format_ratio(ratios["fa3_fp8"]), format_ratio(ratios["cudnn_fp8"]),
                 format_ratio(ratios["best_fp8_peer"]), format_ratio(ratios["ours_bf16"]),
                 ",".join(checks) or "ok"]
        lines.append("  ".join(f"{str(cell):>{width}}" for cell, (_, width) in zip(cells, SPEED_COLUMNS)))
    return lines


def geometric_means(rows):
    """Per head_dim (and causal or not), the geometric mean of each ratio over the rows that have it."""
    lines = []
    for head_dim in sorted({row["head_dim"] for row in rows}):
        for causal in (None, False, True):
            chosen = [row for row in rows if row["head_dim"] == head_dim
                      and (causal is None or row["causal"] == causal)]
            if not chosen or (causal is not None and len({r["causal"] for r in rows}) == 1):
                continue
            parts = []
            for name, label in (("best_fp8_peer", "best fp8 peer"), ("fa3_fp8", "FA3 fp8"),
                                ("cudnn_fp8", "cuDNN fp8"), ("ours_bf16", "ours bf16")):
                ratios = [row["ratios"][name] for row in chosen if row["ratios"].get(name)]
                if ratios:
                    parts.append(f"{label} {bench.geomean(ratios):.3f}x ({len(ratios)} rows)")
            which = "all" if causal is None else ("causal" if causal else "non-causal")
            lines.append(f"  d{head_dim} {which:<10}: " + ("; ".join(parts) if parts else "no ratios"))
    return lines


ACCURACY_COLUMNS = (("ours_fp8_tensor", "ours/T"), ("fa3_fp8_tensor", "FA3/T"),
                    ("cudnn_fp8_tensor", "cuDNN/T"), ("ours_fp8_head", "ours/H"),
                    ("fa3_fp8_head", "FA3/H"), ("ours_bf16", "ours bf16"))
ROTATION_COLUMNS = (("ours_fp8_quant", "ours/Q"), ("ours_fp8_rot", "ours/R"))   # --rotate's


def accuracy_lines(rows):
    columns = ACCURACY_COLUMNS + (ROTATION_COLUMNS if any("quantize" in row for row in rows) else ())
    lines = ["   D    B      S  causal  " + "  ".join(f"{label:>9}" for _, label in columns)]
    for row in rows:
        cells = [f"{row['accuracy'][name] * 100:8.2f}%" if name in row["accuracy"] else "      n/a"
                 for name, _ in columns]
        lines.append(f"{row['head_dim']:>4} {row['batch']:>4} {row['seqlen']:>6}  "
                     f"{'yes' if row['causal'] else 'no':>6}  " + "  ".join(cells))
    return lines


def peer_versions():
    versions = {}
    for name, distribution in (("fa3", "fa3-fwd"), ("cudnn_frontend", "nvidia-cudnn-frontend")):
        try:
            versions[name] = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def report(meta, rows):
    smi = meta.get("nvidia_smi_end") or meta.get("nvidia_smi_start") or {}
    print(f"\nGPU {meta['gpu']} (sm_{meta['compute_capability'].replace('.', '')}, {meta['sms']} SMs), "
          f"driver {smi.get('driver', '?')}, SM clock {smi.get('sm_clock', '?')} "
          f"(max {smi.get('sm_clock_max', '?')})")
    peers = meta["peers"]
    print(f"torch {meta['torch']}, CUDA {meta['cuda']}, cuDNN {meta['cudnn']}, FlashCore {meta['flashcore']}, "
          f"fa3-fwd {peers['fa3'] or '(none)'}, cudnn-frontend {peers['cudnn_frontend'] or '(none)'}")
    if meta.get("rounds", 1) > 1:
        print(f"each row's calls timed {meta['rounds']} times in turn: times are the medians of the rounds, "
              "ratios the medians of the rounds' ratios")
    print("16k tokens, hidden 2048, heads = 2048 // D, Sq = Sk = S, bf16 inputs quantized to e4m3 "
          "(descale amax / 448); ours and FA3 timed with per-(batch, head) descales, cuDNN per tensor "
          "(its output e4m3, ours and FA3's bf16). Ratios: time / our fp8 time (above 1: ours faster).")
    if meta.get("outliers"):
        print(f"q and k have outlier dimensions: every {OUTLIER_EVERY}th from {OUTLIER_FIRST} times "
              f"{meta['outliers']:g}.")
    notes = {}
    for row in rows:
        for name, entry in row["results"].items():
            if "error" in entry:
                notes.setdefault((name, entry["error"]), []).append(f"d{row['head_dim']} S{row['seqlen']}"
                                                                     f"{' causal' if row['causal'] else ''}")
    for (name, error), where in notes.items():
        print(f"  n/a {name} ({len(where)} rows, e.g. {where[0]}): {error}")
    print()
    for line in speed_lines(rows):
        print(line)
    print("\ngeometric means of time / our fp8 time:")
    for line in geometric_means(rows):
        print(line)
    # --no-accuracy: only the timed results' own errors were kept (bf16's, cuDNN's), not the table's
    if meta.get("accuracy", True) and any(row["accuracy"] for row in rows):
        print("\nrelative RMSE against fp32 attention on the original bf16 tensors "
              "(/T: per-tensor scales, the same e4m3 tensors for all three; /H: per-(batch, head)):")
        for line in accuracy_lines(rows):
            print(line)
        if any("quantize" in row for row in rows):
            print("  (/Q, /R: q, k and v quantized per (batch, head) by flashcore.quantize_fp8, q and k "
                  "without (/Q) and with (/R) the rotation)")
    if any("quantize" in row for row in rows):
        print(f"\nflashcore.quantize_fp8 of q per (batch, head): median time of the op's calls, GB/s = "
              f"{QUANTIZE_BYTES} bytes per element over it:")
        for line in quantize_lines(rows):
            print(line)


def quantize_lines(rows):
    lines = ["   D    B      S  causal     plain us    GB/s   rotated us    GB/s"]
    for row in rows:
        timing = row.get("quantize")
        if timing is None:
            continue
        start = (f"{row['head_dim']:>4} {row['batch']:>4} {row['seqlen']:>6}  "
                 f"{'yes' if row['causal'] else 'no':>6}  ")
        if "error" in timing:
            lines.append(start + f"n/a: {timing['error']}")
            continue
        lines.append(start + "  ".join(f"{timing[name]['ms'] * 1e3:11.1f} {timing[name]['gbps']:7.0f}"
                                       for name in ("plain", "rotated")))
    return lines


def parse_args(argv):
    def int_list(text):
        return [int(x) for x in text.split(",")]

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dims", type=int_list,
                        help="head dims, each at most 2048 (default 64,128,256; --quick: 64,128)")
    parser.add_argument("--seqlens", type=int_list,
                        help="seqlens, each dividing 16384 (default 512..16384; --quick: 1k, 4k, 16k)")
    parser.add_argument("--causal", choices=("both", "yes", "no"), default="both")
    parser.add_argument("--quick", action="store_true", help="d64/d128 at S 1k/4k/16k")
    parser.add_argument("--accuracy", action=argparse.BooleanOptionalAction, default=True,
                        help="also the per-tensor and per-head accuracy runs (default on)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="time each row's calls N times in turn: each time is the median of its rounds "
                             "and each ratio the median of the rounds' ratios (default 1)")
    parser.add_argument("--json", metavar="OUT", help="write the metadata and rows here")
    parser.add_argument("--device", type=int, default=0, help="CUDA device (default 0)")
    parser.add_argument("--rotate", action="store_true",
                        help="also ours with q and k quantized by flashcore.quantize_fp8 with and "
                             "without the rotation (accuracy), and quantize_fp8's time on q")
    parser.add_argument("--outliers", type=float, default=0.0, metavar="X",
                        help=f"> 1: every {OUTLIER_EVERY}th dimension of q and k from {OUTLIER_FIRST} "
                             "times X (default 0: plain N(0, 1))")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.outliers < 0 or 0 < args.outliers <= 1:
        parser.error(f"--outliers takes a factor above 1 (or 0: none), not {args.outliers:g}")
    for seqlen in args.seqlens or ():
        if seqlen < 1 or SWEEP_TOKENS % seqlen:
            parser.error(f"seqlen {seqlen} does not divide {SWEEP_TOKENS} tokens")
    for dim in args.dims or ():
        if dim < 1 or dim > SWEEP_HIDDEN:
            parser.error(f"head_dim {dim} is not within 1..{SWEEP_HIDDEN} (the hidden size; heads = {SWEEP_HIDDEN} // head_dim)")
    return args


def main(argv=None):
    args = parse_args(argv)
    import torch

    torch.cuda.set_device(args.device)
    device = torch.device("cuda", args.device)
    torch.manual_seed(0)
    dims = args.dims or (QUICK_HEAD_DIMS if args.quick else HEAD_DIMS)
    seqlens = args.seqlens or (QUICK_SEQLENS if args.quick else SWEEP_SEQLENS)
    causal_modes = {"both": (False, True), "yes": (True,), "no": (False,)}[args.causal]
    meta = bench.collect_metadata(args.device, with_ours=True)
    meta["peers"] = peer_versions()
    meta["accuracy"] = args.accuracy
    meta["rounds"] = args.rounds
    if args.rotate:
        meta["rotate"] = True
    if args.outliers:
        meta["outliers"] = args.outliers
    cudnn, handle = cudnn_module()
    if cudnn is not None:
        meta["cudnn_backend"] = getattr(cudnn, "backend_version", lambda: None)()
    else:
        print(f"no cuDNN fp8 column: {handle}", flush=True)
    problems = [(dim, seqlen, causal) for dim in dims for seqlen in seqlens for causal in causal_modes]
    rows = []
    with flashcore.Context(args.device) as context:
        for index, (dim, seqlen, causal) in enumerate(problems):
            row = run_row(context, cudnn, handle, dim, seqlen, causal, device, args.accuracy, args.rotate,
                          args.outliers, args.rounds)
            rows.append(row)
            times = ", ".join(f"{name} {entry['ms'] * 1e3:.1f} us" if "ms" in entry else f"{name} n/a"
                              for name, entry in row["results"].items())
            if "ours_fp8_rot" in row["accuracy"]:
                times += (f"; rel RMSE {row['accuracy']['ours_fp8_quant'] * 100:.2f}% unrotated, "
                          f"{row['accuracy']['ours_fp8_rot'] * 100:.2f}% rotated")
            print(f"[{index + 1}/{len(problems)}] d{dim} B{row['batch']} S{seqlen}"
                  f"{' causal' if causal else ''}: {times}", flush=True)
            torch.cuda.empty_cache()
    if cudnn is not None:
        cudnn.destroy_handle(handle)
    meta["nvidia_smi_end"] = bench.nvidia_smi(args.device)
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    report(meta, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
