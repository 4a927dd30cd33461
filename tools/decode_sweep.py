"""Decode-kernel configurations on BENCH.md's decode shapes, against cuDNN and FlashAttention-2.

Every configuration runs in this one process on the same tensors as the peers (BENCH.md), is
checked against cuDNN's output before it is timed, and is reported as GB/s of K+V read, its share
of the copy bandwidth, and cuDNN's time over ours (above 1: ours is faster).

    python3 tools/decode_sweep.py                           # the default kernel on both shapes
    python3 tools/decode_sweep.py decode:k2 decode:n64s2w4  # FC_FORCE_VARIANT values to compare
    python3 tools/decode_sweep.py --once CONFIG...          # one launch each and cuDNN's (for ncu)

A configuration is `VARIANT` or `VARIANT@DIR` (templates from DIR, FC_TEMPLATE_DIR); `default`
is the selector's choice.
"""
import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
import flashcore  # noqa: E402

SHAPES = ((64, 8192), (8, 32768))   # (batch, seqlen_k); Hq 32, Hkv 8, Sq 1, D 128


def context_for(config):
    """A FlashCore context for `VARIANT[@DIR]`: the env variables are read at creation."""
    variant, _, templates = config.partition("@")
    saved = {name: os.environ.get(name) for name in ("FC_FORCE_VARIANT", "FC_TEMPLATE_DIR")}
    os.environ.pop("FC_FORCE_VARIANT", None)
    os.environ.pop("FC_TEMPLATE_DIR", None)
    if variant != "default":
        os.environ["FC_FORCE_VARIANT"] = variant
    if templates:
        os.environ["FC_TEMPLATE_DIR"] = templates
    try:
        return flashcore.Context(0, no_disk_cache=True)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def decode_inputs(batch, seqlen_k, dtype):
    """Fresh random q [B, 1, 32, 128], k and v [B, Sk, 8, 128] on the GPU."""
    import torch

    q = torch.randn(batch, 1, 32, 128, dtype=dtype, device="cuda")
    k = torch.randn(batch, seqlen_k, 8, 128, dtype=dtype, device="cuda")
    return q, k, torch.randn_like(k)


def launch_once(configs):
    """One launch of each configuration and of cuDNN on the first shape: for a profiler."""
    import torch

    batch, seqlen_k = SHAPES[0]
    q, k, v = decode_inputs(batch, seqlen_k, torch.float16)
    for config in configs:
        with context_for(config) as context:
            context.attention(q, k, v)
    problem = bench.Problem("decode", "f16", batch, 32, 8, 1, seqlen_k, 128, False, "us", True)
    bench.run_peer("cudnn", q, k, v, problem)
    torch.cuda.synchronize()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", default=["default"])
    parser.add_argument("--dtype", default="f16", choices=bench.DTYPE_NAMES)
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--once", action="store_true",
                        help="launch each configuration and cuDNN once on the first shape, untimed")
    args = parser.parse_args(argv)
    import torch

    if args.once:
        return launch_once(args.configs)

    copy = bench.copy_gbps()
    print(f"copy {copy:.0f} GB/s (read + write)", flush=True)
    rows = []
    for batch, seqlen_k in SHAPES:
        problem = bench.Problem("decode", args.dtype, batch, 32, 8, 1, seqlen_k, 128, False, "us", True)
        q, k, v = decode_inputs(batch, seqlen_k, {"f16": torch.float16, "bf16": torch.bfloat16}[args.dtype])
        peers = {}
        results = {}
        for name in bench.PEERS:
            peers[name], results[name] = bench.run_peer(name, q, k, v, problem)
        for config in ["default"] + [c for c in args.configs if c != "default"]:
            with context_for(config) as context:
                check, relative, results[config] = bench.run_ours(context, q, k, v, problem, peers)
                results[config]["check"] = check
                results[config]["relative_diff"] = relative   # run_ours also gives the kernel's name
        cudnn_ms = results["cudnn"].get("ms")
        print(f"\nB{batch} Hq32 Hkv8 Sq1 Sk{seqlen_k} D128 {args.dtype}: K+V {problem.kv_bytes() / 1e9:.2f} GB")
        for name, entry in results.items():
            if "ms" not in entry:
                print(f"  {name:32s} n/a: {entry.get('error')}")
                continue
            gbps = problem.kv_bytes() / entry["ms"] / 1e6
            entry["gbps"] = gbps
            ratio = cudnn_ms / entry["ms"] if cudnn_ms else None
            print(f"  {name:32s} {entry['ms'] * 1e3:8.1f} us  {gbps:6.0f} GB/s  {gbps / copy:5.1%} of copy  "
                  f"cuDNN/this {ratio:.3f}  {entry.get('check', '')} {entry.get('kernel', '')}")
        rows.append({"batch": batch, "seqlen_k": seqlen_k, "dtype": args.dtype, "copy_gbps": copy,
                     "results": results})
        del q, k, v, peers
        torch.cuda.empty_cache()
    if args.json:
        Path(args.json).write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
