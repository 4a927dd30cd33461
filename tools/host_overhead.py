"""Host time per call from Python (median), FlashCore's op against its ctypes paths and the peers.

On a problem so small that the GPU finishes each kernel before the host issues the next, the wall
time of many back-to-back calls (no synchronization between them) divided by their count is the
host's cost per call. Compare with `fcjit run --host-calls N` (the C API called from C).

    python3 tools/host_overhead.py [--calls 200] [--repeats 30] [--json PATH]

Rows: flashcore.attention (the torch custom op), Context.attention (ctypes, parameters built per
call), PreparedAttention (ctypes, parameters built once: the C call and its stream lookup), SDPA's
flash backend, and FlashAttention-3's flash_attn_func (fa3-fwd, bf16) when it imports.
"""
import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

# Timings and checks are of the planned kernels: no quick first call (fc_attention_forward).
os.environ.setdefault("FC_QUICK_FIRST_CALL", "0")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import package_path  # noqa: E402

package_path.use_repository_package_if_built()
import flashcore  # noqa: E402

SHAPE = (1, 128, 2, 64)   # batch, seqlen, heads, head_dim: a few microseconds of GPU work


def per_call_us(fn, calls, repeats):
    """Median over repeats of (wall time of `calls` calls) / calls, in microseconds, and the GPU
    time per call from CUDA events over the same calls."""
    import torch

    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    host, device = [], []
    start_event, end_event = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(repeats):
        start_event.record()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        host.append((time.perf_counter() - start) / calls * 1e6)
        end_event.record()
        torch.cuda.synchronize()
        device.append(start_event.elapsed_time(end_event) / calls * 1e3)
    return statistics.median(host), statistics.median(device)


def candidates(dtype):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v = (torch.randn(SHAPE, dtype=dtype, device="cuda") for _ in range(3))
    out = torch.empty_like(q)
    context = flashcore.context(torch.cuda.current_device())
    prepared = context.prepare(q, k, v, out=out)
    rows = {
        "flashcore.attention (torch op)": lambda: flashcore.attention(q, k, v),
        "Context.attention (ctypes)": lambda: context.attention(q, k, v, out=out),
        "PreparedAttention (ctypes, prebuilt)": prepared,
    }
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))

    def sdpa_flash():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(qt, kt, vt)

    rows["SDPA flash (inside sdpa_kernel)"] = sdpa_flash
    try:
        from fa3_fwd_interface import flash_attn_func
    except ImportError as error:
        print(f"FA3 not timed: {error}")
    else:
        qb, kb, vb = (t.to(torch.bfloat16) for t in (q, k, v))
        rows["FA3 flash_attn_func (bf16)"] = lambda: flash_attn_func(qb, kb, vb)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    import torch

    print(f"FlashCore {flashcore.version()} ({flashcore.library_path()}), torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}; shape B,S,H,D = {SHAPE} f16, "
          f"{args.repeats} x {args.calls} calls")
    results = {}
    for name, fn in candidates(torch.float16).items():
        host_us, device_us = per_call_us(fn, args.calls, args.repeats)
        results[name] = {"host_us": host_us, "gpu_us": device_us}
        # Host-bound: the GPU waits for each call, so its span matches the host's; GPU-bound: the
        # queue fills and the GPU's span exceeds the host's, which then understates nothing.
        note = "  (GPU-bound: not a host figure)" if device_us > 1.1 * host_us else ""
        print(f"{name:<40} host {host_us:7.2f} us/call   GPU {device_us:7.2f} us/call{note}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
