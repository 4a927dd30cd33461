#!/usr/bin/env python3
"""A new kernel's first call, with and without the quick first call (issue 16's cold-compile bar).

    CUDA_CACHE_DISABLE=1 python3 tools/first_call.py [--rounds 2] [--json PATH]

For each shape, in one process whose NVRTC is loaded already (one unrelated kernel compiled first:
NVRTC's own first compile costs ~0.4 s more, v22.2), a fresh context without a disk cache runs the
problem's first call (compile, module load, launch, synchronize), with the quick first call off
and on, alternating over --rounds. With it on, the time until the planned kernel is ready
(wait_compiles, from the first call's start) too. Then, on warm contexts, the planned kernel's time
and the quick kernel's (forced through FC_FORCE_VARIANT), medians by bench.measure_ms. Every
first call's output and the planned kernel's are checked against SDPA's math path in float64
(BENCH.md's rule, as bench.py's check). Set CUDA_CACHE_DISABLE=1: else NVRTC 12.9+ answers a
source it compiled before from the driver's cache (v22.2). Needs a Hopper GPU.
"""
import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (measure_ms; it imports flashcore and sets FC_QUICK_FIRST_CALL=0 by default)

flashcore = bench.flashcore

# (label, batch, seqlen, heads_q, heads_kv, head_dim, causal): BENCH.md's sweep's kernels where the
# planned one is warp-specialized, and issue 16's GQA and head_dim 96 rows
SHAPES = [
    ("d128", 4, 4096, 16, 16, 128, False),
    ("d128 causal", 4, 4096, 16, 16, 128, True),
    ("d128 S512", 32, 512, 16, 16, 128, False),
    ("d64", 4, 4096, 32, 32, 64, False),
    ("d64 causal 16k", 1, 16384, 32, 32, 64, True),
    ("d256", 4, 4096, 8, 8, 256, False),
    ("d96", 2, 4096, 16, 16, 96, False),
    ("gqa causal", 4, 4096, 32, 8, 128, True),
]


def tensors(shape, dtype):
    import torch

    _, batch, seqlen, heads_q, heads_kv, head_dim, _ = shape
    generator = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randn(batch, seqlen, heads_q, head_dim, dtype=dtype, device="cuda", generator=generator)
    k = torch.randn(batch, seqlen, heads_kv, head_dim, dtype=dtype, device="cuda", generator=generator)
    return q, k, torch.randn_like(k)


def error(out, q, k, v, causal):
    """Max abs error against attention in float64, and the allowed error (BENCH.md: 2x PyTorch's own
    in the inputs' dtype, the standard way with nothing upcast, check.py's attention_pytorch, + 1e-5),
    on the first batch's first K/V head and its query heads (bounded memory: 16k keys' float64
    scores are 2 GB a head). NOTE: not SDPA's math backend, which computes half inputs in fp32: its
    error is the output's rounding alone, and twice that is less than one rounding step of ours
    (first_call.py read 1.039 of such an allowance at head_dim 256, every kernel 0.49-0.97 on fresh
    inputs; PERF_NOTES v42)."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import check

    groups = q.shape[2] // k.shape[2]
    seqlen_q, seqlen_k, head_dim = q.shape[1], k.shape[1], q.shape[3]
    qh = q[0, :, :groups].transpose(0, 1)                               # (groups, Sq, D)
    kh, vh = (t[0, :, :1].transpose(0, 1).expand(groups, -1, -1) for t in (k, v))
    with sdpa_kernel(SDPBackend.MATH):
        exact = F.scaled_dot_product_attention(qh.double(), kh.double(), vh.double(), is_causal=causal)
    visible = check.visible_keys(seqlen_q, seqlen_k, causal, q.device)
    native = check.attention_pytorch(qh, kh, vh, causal, visible, head_dim ** -0.5).double()
    err = (out[0, :, :groups].transpose(0, 1).double() - exact).abs().max().item()
    return err, 2 * (native - exact).abs().max().item() + 1e-5


def first_call(shape, dtype, quick):
    """A cold first call on a fresh context: its milliseconds, the planned kernel's readiness (quick
    only), the error and allowed error of its output."""
    import torch

    q, k, v = tensors(shape, dtype)
    causal = shape[6]
    with flashcore.Context(0, no_disk_cache=True, quick_first_call=quick) as context:
        torch.cuda.synchronize()
        start = time.perf_counter()
        out = context.attention(q, k, v, causal=causal)
        torch.cuda.synchronize()
        first_ms = (time.perf_counter() - start) * 1e3
        ready_ms = None
        if quick:
            context.wait_compiles()
            ready_ms = (time.perf_counter() - start) * 1e3
        err, allowed = error(out, q, k, v, causal)
    return first_ms, ready_ms, err, allowed


# FC_FORCE_VARIANT of the quick first call's kernel for a planned sm90 kernel (the family's
# quick_override, src/family_sm90.c: 64 rows, one warpgroup, 32-key tiles, 2 stages, no turns, no packing,
# the quick form)
QUICK_VARIANT = "sm90:m64n32s2w4p0g0q1"


def speeds(shape, dtype):
    """The planned kernel's and the quick kernel's median ms on warm contexts, the planned kernel's name,
    and the quick kernel's error."""
    q, k, v = tensors(shape, dtype)
    causal = shape[6]
    with flashcore.Context(0, quick_first_call=False) as context:
        kernel = context.plan(q, k, v, causal=causal)[0]
        context.attention(q, k, v, causal=causal)
        planned_ms = bench.measure_ms(lambda: context.attention(q, k, v, causal=causal))
    with bench.make_context(0, {"FC_FORCE_VARIANT": QUICK_VARIANT}) as context:
        quick_kernel = context.plan(q, k, v, causal=causal)[0]
        out = context.attention(q, k, v, causal=causal)
        err, allowed = error(out, q, k, v, causal)
        quick_ms = bench.measure_ms(lambda: context.attention(q, k, v, causal=causal))
    return kernel, quick_kernel, planned_ms, quick_ms, err, allowed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dtype", choices=("bf16", "f16"), default="bf16")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    import torch

    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    if os.environ.get("CUDA_CACHE_DISABLE") != "1":
        print("note: CUDA_CACHE_DISABLE is not 1: NVRTC may answer from the driver's cache", flush=True)
    with flashcore.Context(0, no_disk_cache=True, quick_first_call=False) as context:   # loads NVRTC
        x = torch.randn(1, 64, 2, 64, dtype=dtype, device="cuda")
        context.attention(x, x, x)
    rows, failed = [], 0
    for shape in SHAPES:
        times = {False: [], True: []}
        ready, worst = [], 0.0
        for _ in range(args.rounds):
            for quick in (False, True):
                first_ms, ready_ms, err, allowed = first_call(shape, dtype, quick)
                times[quick].append(first_ms)
                worst = max(worst, err / allowed)
                if ready_ms is not None:
                    ready.append(ready_ms)
        kernel, quick_kernel, planned_ms, quick_ms, err, allowed = speeds(shape, dtype)
        worst = max(worst, err / allowed)
        row = {"shape": shape[0], "batch": shape[1], "seqlen": shape[2], "heads_q": shape[3],
               "heads_kv": shape[4], "head_dim": shape[5], "causal": shape[6], "dtype": args.dtype,
               "kernel": kernel, "quick_kernel": quick_kernel,
               "first_call_ms_off": statistics.median(times[False]),
               "first_call_ms_quick": statistics.median(times[True]),
               "planned_ready_ms": statistics.median(ready), "first_calls_off": times[False],
               "first_calls_quick": times[True], "planned_ms": planned_ms, "quick_ms": quick_ms,
               "quick_over_planned": quick_ms / planned_ms, "worst_err_over_allowed": worst}
        failed += worst > 1.0
        rows.append(row)
        print(f"{shape[0]:16s} first call: off {row['first_call_ms_off']:7.1f} ms, quick "
              f"{row['first_call_ms_quick']:7.1f} ms (planned ready {row['planned_ready_ms']:7.1f} ms); "
              f"kernel {planned_ms:.3f} ms, quick kernel {quick_ms:.3f} ms ({quick_ms / planned_ms:.2f}x); "
              f"err/allowed {worst:.3f}; {kernel} / {quick_kernel}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": torch.cuda.get_device_name(0), "rows": rows}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
