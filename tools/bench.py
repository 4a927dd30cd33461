"""Speed benchmark of FlashCore's attention against PyTorch SDPA's flash and cuDNN backends.

As shared/BENCH.md asks: the peers run in the same process on the same tensors (SDPA gets
[B, H, S, D] transposed views of the BSHD tensors ours gets). Each time is a median from
triton.testing.do_bench (CUDA events around each launch, L2 flushed between launches), or of 3
launches when one launch takes over 50 ms. Before it is timed, ours is compared with a peer's
output, so that a wrong kernel's speed is never reported silently ("MISMATCH"). With --rounds N
every timed call of a row is timed N times in turn (flash, cuDNN, FA3, ours, ...; the first round
is the single timing of --rounds 1): each time is the median of its rounds, each ratio the median of
the rounds' ratios, so that the clock's drift under the board's power limit reaches each call alike.

    python3 tools/bench.py                 # the FlashAttention-3 sweep plus small/GQA/decode shapes
    python3 tools/bench.py --quick         # d64/d128 f16 at 1k/4k/16k
    python3 tools/bench.py --no-ours       # peers only
    python3 tools/bench.py --report DIR    # also JSON, PNG plots and NVML power per result in DIR
    python3 tools/bench.py --rounds 3      # each row's calls timed in turn three times

Prints progress, then the header (GPU, driver, clocks, versions, ceilings) and the table last.
"""
import argparse
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import warnings
from pathlib import Path
from typing import NamedTuple

# Timings and checks are of the planned kernels: no quick first call (fc_attention_forward). Read when a
# context is made: every script that imports this module before it makes one (bench_*.py, decode_sweep.py,
# ab_rounds.py, first_call.py) gets it too.
os.environ.setdefault("FC_QUICK_FIRST_CALL", "0")

sys.path.insert(0, str(Path(__file__).resolve().parent))   # also run as `python3 -m tools.bench`
import bench_report  # noqa: E402
import package_path  # noqa: E402

package_path.use_repository_package_if_built()
import flashcore  # noqa: E402

SWEEP_TOKENS = 16 * 1024
SWEEP_HIDDEN = 2048
SWEEP_SEQLENS = (512, 1024, 2048, 4096, 8192, 16384)
QUICK_SEQLENS = (1024, 4096, 16384)
HEAD_DIMS = (64, 128, 256)
QUICK_HEAD_DIMS = (64, 128)
DTYPE_NAMES = ("f16", "bf16")
QUICK_DTYPE_NAMES = ("f16",)
ELEMENT_BYTES = 2

WARMUP_MS = 25
REP_MS = 100
SLOW_CALL_MS = 50      # one launch slower than this: time SLOW_RUNS launches by hand instead
SLOW_RUNS = 3
MATCH_TOLERANCE = 2e-2   # max |ours - peer| / max |peer|

MATMUL_SIZE = 8192
COPY_BYTES = 1 << 30

PEERS = ("flash", "cudnn", "fa3")   # fa3: FlashAttention-3 (fa3-fwd, ../shared/PEERS.md), where installed


class Problem(NamedTuple):
    """One benchmarked shape; unit is how its times are shown ("ms" or "us")."""

    label: str
    dtype: str
    batch: int
    heads_q: int
    heads_kv: int
    seqlen_q: int
    seqlen_k: int
    head_dim: int
    causal: bool
    unit: str = "ms"
    memory_bound: bool = False

    def flops(self):
        """4 B Hq Sq Sk D, halved for causal when Sq == Sk (the FlashAttention convention)."""
        flops = 4 * self.batch * self.heads_q * self.seqlen_q * self.seqlen_k * self.head_dim
        return flops // 2 if self.causal and self.seqlen_q == self.seqlen_k else flops

    def kv_bytes(self):
        """Bytes of K and V: what a decode step must read."""
        return 2 * self.batch * self.seqlen_k * self.heads_kv * self.head_dim * ELEMENT_BYTES

    def describe(self):
        return (f"{self.label} {self.dtype} B{self.batch} H{self.heads_q}/{self.heads_kv} "
                f"S{self.seqlen_q}/{self.seqlen_k} D{self.head_dim}"
                f"{' causal' if self.causal else ''}")


def build_problems(dims, dtypes, causal_modes, seqlens, extra):
    """The sweep (16k tokens, hidden 2048), then the small, GQA prefill and decode shapes."""
    problems = []
    for dtype in dtypes:
        for head_dim in dims:
            heads = SWEEP_HIDDEN // head_dim
            for seqlen in seqlens:
                for causal in causal_modes:
                    problems.append(Problem("sweep", dtype, SWEEP_TOKENS // seqlen, heads, heads,
                                            seqlen, seqlen, head_dim, causal))
    if extra:
        for dtype in dtypes:
            for causal in causal_modes:
                problems.append(Problem("small", dtype, 2, 8, 8, 512, 512, 64, causal, unit="us"))
            if True in causal_modes:   # issue 16's two GQA prefill shapes
                problems.append(Problem("gqa", dtype, 4, 32, 8, 4096, 4096, 128, True))
                problems.append(Problem("gqa", dtype, 1, 64, 8, 8192, 8192, 128, True))
            # Sq = 1: causal or not is the same problem; SDPA's top-left causal would not be.
            for batch, seqlen_k in ((64, 8192), (8, 32768)):
                problems.append(Problem("decode", dtype, batch, 32, 8, 1, seqlen_k, 128, False,
                                        unit="us", memory_bound=True))
            # a GQA ratio that does not divide 16: 7 query heads per K/V head
            problems.append(Problem("decode", dtype, 64, 28, 4, 1, 8192, 128, False,
                                    unit="us", memory_bound=True))
            # few query rows against a long cache (speculative decoding, chunked-prefill tails):
            # 16 rows x 4 query heads per K/V head, bottom-right causal
            if True in causal_modes:
                problems.append(Problem("fewq", dtype, 8, 32, 8, 16, 16000, 128, True,
                                        unit="us", memory_bound=True))
                # ... and 8 query heads per K/V head (Hq64 Hkv8: 128 packed rows)
                problems.append(Problem("fewq", dtype, 8, 64, 8, 16, 16000, 128, True,
                                        unit="us", memory_bound=True))
    return problems


def first_line(text):
    lines = str(text).strip().splitlines()
    return lines[0] if lines else ""


def measure_ms(fn):
    """Median milliseconds of fn(), which must have run once already (compiled, planned).

    One timed launch first: past SLOW_CALL_MS, the median of SLOW_RUNS launches timed with CUDA
    events; else triton.testing.do_bench, which flushes L2 between launches.
    """
    import torch
    import triton.testing

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def timed():
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    if timed() > SLOW_CALL_MS:
        return statistics.median(timed() for _ in range(SLOW_RUNS))
    return triton.testing.do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, return_mode="median")


def alternated(launches, rounds, contexts=None):
    """{name: [ms of each round]}: the launches of `launches` ({name: fn}) timed in turn by
    measure_ms, `rounds` times, so that the clock's and the temperature's drift reaches each alike
    (one pair of timings moved identical kernels by up to 5% on an H100, PERF_NOTES v23.5).
    contexts: {name: a factory of the context manager its timing runs under (SDPA's backend), or
    None}."""
    times = {name: [] for name in launches}
    for _ in range(rounds):
        for name, launch in launches.items():
            context = (contexts or {}).get(name)
            with context() if context else contextlib.nullcontext():
                times[name].append(measure_ms(launch))
    return times


class Power(NamedTuple):
    """NVML power sampling after each timing (--report): fn runs `seconds` more while sampled."""

    nvml: object
    seconds: float


def measure_entry(fn, power=None):
    """A result entry for fn: its median ms and, with power, NVML power, clocks and temperature
    while it ran (bench_report.power_while_running)."""
    import torch

    entry = {"ms": measure_ms(fn)}
    if power is not None:
        entry.update(bench_report.power_while_running(fn, power.nvml, power.seconds, entry["ms"],
                                                      torch.cuda.synchronize))
    return entry


def matmul_tflops():
    """TFLOP/s of a large fp16 matmul on random data (the tensor-core ceiling)."""
    import torch

    a = torch.randn(MATMUL_SIZE, MATMUL_SIZE, dtype=torch.float16, device="cuda")
    b = torch.randn_like(a)
    c = torch.empty_like(a)

    def matmul():
        torch.mm(a, b, out=c)

    matmul()
    return 2 * MATMUL_SIZE ** 3 / measure_ms(matmul) / 1e9


def copy_gbps():
    """GB/s of a large device-to-device copy, counting the bytes read and written."""
    import torch

    src = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)

    def copy():
        dst.copy_(src)

    copy()
    return 2 * COPY_BYTES / measure_ms(copy) / 1e6


def measure_ceilings():
    """The device's own ceilings, to read the attention numbers against."""
    import torch

    ceilings = {"matmul_f16_tflops": matmul_tflops(), "copy_gbps": copy_gbps()}
    torch.cuda.empty_cache()
    return ceilings


def gpu_uuid(device):
    """"GPU-<uuid>" of torch's device, or "" if torch does not say."""
    import torch

    # NOTE: the UUID names the same GPU as torch's ordinal whatever CUDA_VISIBLE_DEVICES says.
    uuid = str(getattr(torch.cuda.get_device_properties(device), "uuid", "") or "")
    return uuid if not uuid or uuid.startswith("GPU-") else f"GPU-{uuid}"


def nvidia_smi(device):
    """SM clock, its maximum and the driver version from nvidia-smi, or {} if it cannot tell."""
    uuid = gpu_uuid(device)
    ids = ([uuid] if uuid else []) + [str(device)]
    for gpu in ids:
        try:
            result = subprocess.run(
                ["nvidia-smi", "-i", gpu, "--query-gpu=clocks.sm,clocks.max.sm,driver_version",
                 "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return {}
        fields = [field.strip() for field in result.stdout.strip().split(",")]
        if result.returncode == 0 and len(fields) == 3:
            return dict(zip(("sm_clock", "sm_clock_max", "driver"), fields))
    return {}


def collect_metadata(device, with_ours):
    import torch
    import triton

    props = torch.cuda.get_device_properties(device)
    return {
        "gpu": props.name,
        "compute_capability": f"{props.major}.{props.minor}",
        "sms": props.multi_processor_count,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "triton": triton.__version__,
        "flashcore": flashcore.version() if with_ours else None,
        "flashcore_library": str(flashcore.library_path()) if with_ours else None,
        "nvidia_smi_start": nvidia_smi(device),
    }


def sdpa_reasons(caught_warnings, limit=2):
    """Why SDPA refused a backend: it raises only "No available kernel" and says why in warnings,
    among headings ("... not used because:") and notes on the backends sdpa_kernel disabled."""
    reasons = []
    for warning in caught_warnings:
        line = first_line(warning.message).split(" (Triggered internally")[0]
        if line and not line.endswith(":") and "disabled" not in line and line not in reasons:
            reasons.append(line)
    return reasons[:limit]


def fa3_call(*args, varlen=False, **kwargs):
    """A call of FlashAttention-3's forward (fa3-fwd, ../shared/PEERS.md: bf16, no fp16):
    flash_attn_func(*args, **kwargs), or flash_attn_varlen_func with varlen, returning its output
    alone (its builds may return (out, lse)). Raises ImportError where fa3-fwd is not installed."""
    import fa3_fwd_interface

    forward = fa3_fwd_interface.flash_attn_varlen_func if varlen else fa3_fwd_interface.flash_attn_func

    def call():
        result = forward(*args, **kwargs)
        return result[0] if isinstance(result, tuple) else result

    return call


def run_fa3(q, k, v, problem, power=None, calls=None):
    """FlashAttention-3's forward on q, k, v ([B, S, H, D]; GQA and bottom-right causal as ours): its
    build has no fp16, so f16 rows run on bf16 copies of the same tensors (../shared/PEERS.md).
    (output, result entry); its output is in bf16 and never the one ours is checked against. calls:
    a dict that gets the timed call as "fa3" (run_problem's later rounds: later_rounds' form)."""
    import torch

    try:
        call = fa3_call(*(t.to(torch.bfloat16) for t in (q, k, v)), causal=problem.causal)
    except ImportError as error:
        return None, {"error": f"fa3-fwd not installed ({first_line(error)}; ../shared/PEERS.md)"}

    try:
        out = call()
    except (RuntimeError, ValueError) as error:
        return None, {"error": first_line(error)}
    if calls is not None:
        calls["fa3"] = (call, None)
    return out, measure_entry(call, power)


def run_peer(name, q, k, v, problem, power=None, calls=None):
    """SDPA restricted to one backend on [B, H, S, D] views of q, k, v (or FlashAttention-3, run_fa3):
    (output, result entry). calls: a dict that gets (the timed call, what it runs under) under name."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if name == "fa3":
        return run_fa3(q, k, v, problem, power, calls)
    backend = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[name]
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    gqa = problem.heads_q != problem.heads_kv
    # SDPA's is_causal is top-left aligned where Sq != Sk: ours (and FA3's) bottom-right is its
    # causal_lower_right bias (which a backend may decline: the row then says why)
    lower_right = problem.causal and problem.seqlen_q != problem.seqlen_k
    if lower_right:
        from torch.nn.attention.bias import causal_lower_right
        bias = causal_lower_right(problem.seqlen_q, problem.seqlen_k)

    def call():
        if lower_right:
            return F.scaled_dot_product_attention(qt, kt, vt, attn_mask=bias, enable_gqa=gqa)
        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=problem.causal, enable_gqa=gqa)

    with sdpa_kernel(backend):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = call()
            except (RuntimeError, ValueError) as error:
                return None, {"error": "; ".join(sdpa_reasons(caught) + [first_line(error)])}
        if calls is not None:
            calls[name] = (call, lambda: sdpa_kernel(backend))
        return out, measure_entry(call, power)


def relative_diff(got, expected):
    """max |got - expected| / max |expected|, in float32: how every bench compares two outputs."""
    return ((got.float() - expected.float()).abs().max() / expected.float().abs().max()).item()


def match(got, expected):
    """{"check": "ok" or "MISMATCH", "relative_diff": ...} of got against expected."""
    diff = relative_diff(got, expected)
    return {"check": "ok" if diff < MATCH_TOLERANCE else "MISMATCH", "relative_diff": diff}


def geomean(values):
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def check_ours(ours, peer_outputs):
    """Ours against the cuDNN (else flash, else FA3's bf16) output: ("ok" or "MISMATCH", max diff /
    max |peer|)."""
    for name in ("cudnn", "flash", "fa3"):
        peer = peer_outputs.get(name)
        if peer is not None:
            entry = match(ours, peer if name == "fa3" else peer.transpose(1, 2))
            return entry["check"], entry["relative_diff"]
    return "unchecked", None


def run_ours(context, q, k, v, problem, peer_outputs, power=None, calls=None, name="ours"):
    """(check, relative diff, result entry) of one FlashCore context on the tensors. calls: a dict
    that gets (the timed launch, None) under name."""
    import torch

    try:
        launch = context.prepare(q, k, v, causal=problem.causal, out=torch.empty_like(q))
        launch()
        torch.cuda.synchronize(q.device)
        check, relative = check_ours(launch.out, peer_outputs)
        entry = measure_entry(launch, power)
        if calls is not None:
            calls[name] = (launch, None)
    except flashcore.FlashCoreError as error:
        return "error", None, {"error": first_line(error)}
    try:   # a baseline build older than pointer-free planning cannot name its kernel: "?"
        entry["kernel"] = context.plan(q, k, v, causal=problem.causal)[0]
    except flashcore.FlashCoreError:
        entry["kernel"] = "?"
    return check, relative, entry


def problem_tensors(problem, device):
    """Fresh N(0, 1) q, k, v of a problem, [B, S, H, D]."""
    import torch

    dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[problem.dtype]
    q = torch.randn(problem.batch, problem.seqlen_q, problem.heads_q, problem.head_dim,
                    dtype=dtype, device=device)
    k = torch.randn(problem.batch, problem.seqlen_k, problem.heads_kv, problem.head_dim,
                    dtype=dtype, device=device)
    return q, k, torch.randn_like(k)


def make_context(device, env=None, **options):
    """A flashcore.Context made with the variables of `env` set (FC_TUNED, FC_FORCE_VARIANT: the
    library reads them when a context is made), the environment restored after; `options` go to
    Context (library, cache_path)."""
    saved = {name: os.environ.get(name) for name in env or {}}
    os.environ.update({name: value for name, value in (env or {}).items() if value is not None})
    try:
        return flashcore.Context(device, **options)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def later_rounds(results, calls, rounds):
    """Rounds 2 to `rounds` of the calls that were timed once (`calls`, by name, in the first
    round's order: (call, a context manager's factory it runs under, or None)), alternated: each
    result's ms becomes the median of its rounds (rounds_ms, the first round's time first).
    Returns {name: [ms of each round]}."""
    times = {name: [results[name]["ms"]] for name in calls if "ms" in results.get(name, {})}
    if rounds > 1:
        for name, more in alternated({name: calls[name][0] for name in times}, rounds - 1,
                                     {name: calls[name][1] for name in times}).items():
            times[name] += more
    for name, ms in times.items():
        results[name]["rounds_ms"] = ms
        results[name]["ms"] = statistics.median(ms)
    return times


def round_ratios(numerators, denominators):
    """The rounds' ratios of two calls timed in alternation (alternated): numerator / denominator,
    round by round."""
    return [a / b for a, b in zip(numerators, denominators)]


def round_ratio(times, name, over="ours"):
    """The median over the rounds of times[name] / times[over]; None where either was not timed."""
    if name not in times or over not in times:
        return None
    return statistics.median(round_ratios(times[name], times[over]))


def run_problem(context, problem, device, others=None, power=None, rounds=1):
    """Times the peers and ours (and the other FlashCore contexts in `others`, by name: "untuned",
    "baseline") on one set of tensors, `rounds` times in turn (later_rounds); returns the problem's
    JSON row, whose ratios are the medians of the rounds' (peer time / ours)."""
    q, k, v = problem_tensors(problem, device)
    results, peer_outputs, calls = {}, {}, {}
    for name in PEERS:
        peer_outputs[name], results[name] = run_peer(name, q, k, v, problem, power, calls)

    row = {**problem._asdict(), "flops": problem.flops(), "kv_bytes": problem.kv_bytes(),
           "check": "-", "check_relative_diff": None}
    if context is not None:
        row["check"], row["check_relative_diff"], results["ours"] = run_ours(
            context, q, k, v, problem, peer_outputs, power, calls)
    others = others or {}
    for name, other in others.items():
        check, _, results[name] = run_ours(other, q, k, v, problem, peer_outputs, power, calls, name)
        row[f"check_{name}"] = check
    times = later_rounds(results, calls, rounds)
    row["rounds"] = rounds

    for entry in results.values():
        if "ms" in entry:
            entry["tflops"] = problem.flops() / entry["ms"] / 1e9
            entry["gbps"] = problem.kv_bytes() / entry["ms"] / 1e6
            bench_report.add_efficiency(entry)
    for name in PEERS + tuple(others):
        row[f"ratio_{name}"] = round_ratio(times, name)
    row["results"] = results
    return row


def format_time(ms, unit):
    if ms is None:
        return "n/a"
    return f"{ms * 1e3:.1f} us" if unit == "us" else f"{ms:.3f} ms"


def format_rate(entry, problem_row, ceilings):
    """TFLOP/s, or for a memory-bound problem GB/s of K+V and its share of the copy bandwidth."""
    if "ms" not in entry:
        return "n/a"
    if problem_row["memory_bound"]:
        return f"{entry['gbps']:.0f} GB/s {entry['gbps'] / ceilings['copy_gbps']:.0%}"
    return f"{entry['tflops']:.1f} TF/s"


def format_ratio(ratio):
    return "-" if ratio is None else f"{ratio:.3g}x"


COLUMNS = (("case", 6), ("dtype", 5), ("B", 3), ("Hq", 3), ("Hkv", 3), ("Sq", 5), ("Sk", 5),
           ("D", 3), ("causal", 6), ("ours", 11), ("ours rate", 14), ("flash", 11),
           ("flash rate", 14), ("f/o", 6), ("cudnn", 11), ("cudnn rate", 14), ("c/o", 6),
           ("fa3", 11), ("fa3 rate", 14), ("3/o", 6), ("check", 9))


def table_lines(rows, ceilings):
    """The fixed-width table; f/o, c/o and 3/o are peer time / our time (above 1: ours is faster)."""
    lines = ["  ".join(f"{title:>{width}}" for title, width in COLUMNS)]
    for row in rows:
        results = row["results"]
        ours = results.get("ours", {})
        cells = [row["label"], row["dtype"], row["batch"], row["heads_q"], row["heads_kv"],
                 row["seqlen_q"], row["seqlen_k"], row["head_dim"],
                 "yes" if row["causal"] else "no",
                 format_time(ours.get("ms"), row["unit"]) if ours else "-",
                 format_rate(ours, row, ceilings) if ours else "-"]
        for name in PEERS:   # rows saved before a peer existed have none of it
            entry = results.get(name, {})
            cells += [format_time(entry.get("ms"), row["unit"]), format_rate(entry, row, ceilings),
                      format_ratio(row.get(f"ratio_{name}"))]
        cells.append(row["check"])
        lines.append("  ".join(f"{str(cell):>{width}}" for cell, (_, width) in zip(cells, COLUMNS)))
    return lines


def report(meta, ceilings, rows):
    """Prints the header, the reasons of any n/a, and the table last."""
    smi = meta["nvidia_smi_end"] or meta["nvidia_smi_start"]
    print(f"\nGPU {meta['gpu']} (sm_{meta['compute_capability'].replace('.', '')}, "
          f"{meta['sms']} SMs), driver {smi.get('driver', '?')}, "
          f"SM clock {meta['nvidia_smi_start'].get('sm_clock', '?')} at start / "
          f"{smi.get('sm_clock', '?')} at end, max {smi.get('sm_clock_max', '?')}")
    print(f"torch {meta['torch']}, CUDA {meta['cuda']}, cuDNN {meta['cudnn']}, "
          f"triton {meta['triton']}, FlashCore {meta['flashcore'] or '(not run)'}")
    print(f"ceilings: fp16 matmul {ceilings['matmul_f16_tflops']:.0f} TFLOP/s, "
          f"copy {ceilings['copy_gbps']:.0f} GB/s (read + write)")
    print("ratios f/o, c/o and 3/o (FlashAttention-3, f16 rows on bf16 copies) are peer time / our time: "
          "above 1 means FlashCore is faster; "
          "decode rates are GB/s of K+V read and their share of the copy bandwidth")
    rounds = meta.get("rounds", 1)
    if rounds > 1:
        print(f"each row's calls timed {rounds} times in turn: times are the medians of the rounds, "
              "ratios the medians of the rounds' ratios")
    for index, row in enumerate(rows):
        for name, entry in row["results"].items():
            if "error" in entry:
                print(f"  n/a row {index + 1} {name}: {entry['error']}")
    print()
    for line in table_lines(rows, ceilings):
        print(line)
    print(geometric_means(rows))
    for line in sweep_bars(rows):
        print(line)


# FA3's Python call and launch weigh at 512-1k keys (hundreds of microseconds at 512 keys against
# a 159 us kernel, PERF_NOTES v16): its ratios from this many keys on are also given on their own.
FA3_KERNEL_BOUND_KEYS = 2048
BEST_PEER_BAR = 0.92


def sweep_bars(rows):
    """Issue 16's sweep figures: bf16 rows against FA3 (also from FA3_KERNEL_BOUND_KEYS keys), f16 +
    bf16 rows against cuDNN, and the rows below BEST_PEER_BAR of the faster of FA3 and cuDNN."""
    sweep = [row for row in rows if row["label"] == "sweep"]
    lines = []
    fa3 = [row for row in sweep if row["dtype"] == "bf16" and row.get("ratio_fa3")]
    if fa3:
        line = f"sweep, bf16 rows against FA3: {geomean(row['ratio_fa3'] for row in fa3):.4f}x ({len(fa3)} rows)"
        long_rows = [row["ratio_fa3"] for row in fa3 if row["seqlen_k"] >= FA3_KERNEL_BOUND_KEYS]
        if long_rows:
            line += f"; from {FA3_KERNEL_BOUND_KEYS} keys {geomean(long_rows):.4f}x ({len(long_rows)} rows)"
        lines.append(line)
    cudnn = [row["ratio_cudnn"] for row in sweep if row.get("ratio_cudnn")]
    if cudnn:
        lines.append(f"sweep, all rows against cuDNN: {geomean(cudnn):.4f}x ({len(cudnn)} rows)")
    best = [min(row[key] for key in ("ratio_fa3", "ratio_cudnn") if row.get(key)) for row in sweep
            if row.get("ratio_fa3") or row.get("ratio_cudnn")]   # the faster peer: the smaller ratio
    if best:
        lines.append(f"sweep rows below {BEST_PEER_BAR}x of the best peer (FA3, cuDNN): "
                     f"{sum(ratio < BEST_PEER_BAR for ratio in best)} of {len(best)}")
    return lines


def geometric_means(rows):
    """One line: the geometric mean over the rows of each ratio (peer or other build time / ours)."""
    names = sorted({key[len("ratio_"):] for row in rows for key in row if key.startswith("ratio_")})
    parts = []
    for name in names:
        ratios = [row[f"ratio_{name}"] for row in rows if row.get(f"ratio_{name}")]
        if ratios:
            parts.append(f"{name} {geomean(ratios):.4f}x ({len(ratios)} rows, "
                         f"{min(ratios):.3f}-{max(ratios):.3f})")
    return "geometric means of time / ours: " + ("; ".join(parts) if parts else "none")


def parse_args(argv):
    def int_list(text):
        return [int(x) for x in text.split(",")]

    def dtype_list(text):
        names = text.split(",")
        unknown = set(names) - set(DTYPE_NAMES)
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown dtypes {sorted(unknown)}: use f16, bf16")
        return names

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dims", type=int_list,
                        help="head dims of the sweep (default 64,128,256; --quick: 64,128)")
    parser.add_argument("--dtypes", type=dtype_list,
                        help="f16 and/or bf16 (default f16,bf16; --quick: f16)")
    parser.add_argument("--causal", choices=("both", "yes", "no"), default="both")
    parser.add_argument("--quick", action="store_true",
                        help="d64/d128, f16, seqlens 1k/4k/16k only")
    parser.add_argument("--extra", action=argparse.BooleanOptionalAction, default=True,
                        help="also the small, GQA prefill, decode and few-query shapes (default on)")
    parser.add_argument("--labels", type=lambda text: text.split(","),
                        help="only the rows of these labels (sweep, small, gqa, decode, fewq)")
    parser.add_argument("--json", metavar="PATH", help="write the metadata and rows here")
    parser.add_argument("--report", metavar="DIR",
                        help="write DIR/bench.json, PNG plots and report.md (tools/bench_report.py), "
                             "with NVML power, clocks and temperature per result")
    parser.add_argument("--power-seconds", type=float, default=1.0,
                        help="with --report: how long each result runs again while NVML is "
                             "sampled (default 1.0; 0: no power)")
    parser.add_argument("--no-ours", action="store_true", help="time the peers only")
    parser.add_argument("--untuned", action="store_true",
                        help="also time FlashCore with its tuned winners ignored (FC_TUNED=0): the "
                             "heuristic; ratio_untuned = its time / ours")
    parser.add_argument("--baseline-lib", metavar="PATH",
                        help="also time another libflashcore.so (another build of the same API: 0.2 "
                             "or later) on the same tensors; ratio_baseline = its time / ours")
    parser.add_argument("--baseline-db", metavar="PATH",
                        help="also time a baseline (this library, or --baseline-lib) whose kernel cache "
                             "is this file: e.g. an empty one, so that it runs the shipped tuned winners "
                             "while ours runs the winners of FC_TUNING_DB's cache")
    parser.add_argument("--rounds", type=int, default=1,
                        help="time each row's calls this many times in turn, each time the median of "
                             "its rounds and each ratio the median of the rounds' ratios (default 1; "
                             "--report's power readings are the first round's)")
    parser.add_argument("--device", type=int, default=0, help="CUDA device (default 0)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    import torch

    torch.cuda.set_device(args.device)
    device = torch.device("cuda", args.device)
    causal_modes = {"both": (False, True), "yes": (True,), "no": (False,)}[args.causal]
    problems = build_problems(
        args.dims or (QUICK_HEAD_DIMS if args.quick else HEAD_DIMS),
        args.dtypes or (QUICK_DTYPE_NAMES if args.quick else DTYPE_NAMES),
        causal_modes, QUICK_SEQLENS if args.quick else SWEEP_SEQLENS, args.extra)
    if args.labels:
        problems = [p for p in problems if p.label in args.labels]

    meta = collect_metadata(args.device, not args.no_ours)
    meta["rounds"] = args.rounds
    power = None
    if args.report and args.power_seconds > 0:
        nvml = bench_report.Nvml(args.device, gpu_uuid(args.device))
        meta["power_source"], meta["power_error"] = nvml.source, nvml.error
        if nvml.error:
            print(f"no power readings: {nvml.error}", flush=True)
        else:
            power = Power(nvml, args.power_seconds)
    print("measuring ceilings", flush=True)
    ceilings = measure_ceilings()
    print(f"ceilings: {ceilings}", flush=True)

    context = None if args.no_ours else flashcore.Context(args.device)
    others = {}
    if args.untuned and context is not None:   # the same library with its tuned winners ignored
        others["untuned"] = make_context(args.device, {"FC_TUNED": "0"})
    if (args.baseline_lib or args.baseline_db) and context is not None:
        options = {"library": args.baseline_lib} if args.baseline_lib else {}
        if args.baseline_db:
            options["cache_path"] = args.baseline_db
            meta["baseline_cache"] = args.baseline_db
        others["baseline"] = flashcore.Context(args.device, **options)
        meta["baseline_library"] = args.baseline_lib or "(this library)"
    rows = []
    try:
        for index, problem in enumerate(problems):
            row = run_problem(context, problem, device, others, power, args.rounds)
            rows.append(row)
            times = ", ".join(f"{name} {format_time(entry.get('ms'), problem.unit)}"
                              for name, entry in row["results"].items())
            print(f"[{index + 1}/{len(problems)}] {problem.describe()}: {times}, "
                  f"check {row['check']}", flush=True)
            torch.cuda.empty_cache()
    finally:
        if context is not None:
            context.close()
        for other in others.values():
            other.close()

    meta["nvidia_smi_end"] = nvidia_smi(args.device)
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, "ceilings": ceilings, "rows": rows},
                                              indent=1) + "\n")
    report(meta, ceilings, rows)
    if args.report:
        written = bench_report.write_report({"meta": meta, "ceilings": ceilings, "rows": rows},
                                            args.report, table_lines(rows, ceilings))
        print(f"report: {', '.join(str(path) for path in written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
