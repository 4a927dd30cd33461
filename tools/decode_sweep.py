"""Kernel configurations on BENCH.md's decode shapes (or others: few query rows against many keys),
against cuDNN, FlashAttention-2 and FlashAttention-3 (where installed).

Every configuration runs in this one process on the same tensors as the peers (BENCH.md), is
checked against the peers' output before it is timed, and is reported as GB/s of K+V read, its share
of the copy bandwidth, and each peer's time over ours (above 1: ours is faster).

    python3 tools/decode_sweep.py                           # the default kernel on both shapes
    python3 tools/decode_sweep.py decode:k2 decode:n64s2w4  # FC_FORCE_VARIANT values to compare
    python3 tools/decode_sweep.py default sm90:g1 --shapes 8,64,8,16,16000,causal   # B,Hq,Hkv,Sq,Sk[,causal]
    python3 tools/decode_sweep.py --once CONFIG...          # one launch each and cuDNN's (for ncu)

A configuration is `VARIANT` or `VARIANT@DIR` (templates from DIR, FC_TEMPLATE_DIR); `default`
is the selector's choice.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402

SHAPES = ((64, 32, 8, 1, 8192, False), (8, 32, 8, 1, 32768, False))   # (B, Hq, Hkv, Sq, Sk, causal)


def shape_arg(text):
    """`B,Hq,Hkv,Sq,Sk[,causal]` as a SHAPES entry."""
    parts = text.split(",")
    if len(parts) not in (5, 6) or (len(parts) == 6 and parts[5] != "causal"):
        raise argparse.ArgumentTypeError(f"{text!r}: B,Hq,Hkv,Sq,Sk or B,Hq,Hkv,Sq,Sk,causal")
    try:
        numbers = [int(p) for p in parts[:5]]
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r}: {error}") from error
    if min(numbers) < 1 or numbers[1] % numbers[2]:
        raise argparse.ArgumentTypeError(f"{text!r}: positive sizes, Hq a multiple of Hkv")
    return (*numbers, len(parts) == 6)


def context_for(config):
    """A FlashCore context for `VARIANT[@DIR]` (bench.make_context; an empty variable is unset to the
    library: the selector's choice, the embedded templates)."""
    variant, _, templates = config.partition("@")
    return bench.make_context(0, {"FC_FORCE_VARIANT": "" if variant == "default" else variant,
                                  "FC_TEMPLATE_DIR": templates}, no_disk_cache=True)


def decode_inputs(shape, dtype, head_dim=128):
    """Fresh random q [B, Sq, Hq, head_dim], k and v [B, Sk, Hkv, head_dim] on the GPU."""
    import torch

    batch, heads_q, heads_kv, seqlen_q, seqlen_k, _ = shape
    q = torch.randn(batch, seqlen_q, heads_q, head_dim, dtype=dtype, device="cuda")
    k = torch.randn(batch, seqlen_k, heads_kv, head_dim, dtype=dtype, device="cuda")
    return q, k, torch.randn_like(k)


def problem_of(shape, dtype, head_dim=128):
    batch, heads_q, heads_kv, seqlen_q, seqlen_k, causal = shape
    return bench.Problem("decode", dtype, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, causal, "us", True)


def launch_once(configs):
    """One launch of each configuration and of cuDNN on the first shape: for a profiler."""
    import torch

    q, k, v = decode_inputs(SHAPES[0], torch.float16)
    problem = problem_of(SHAPES[0], "f16")
    for config in configs:
        with context_for(config) as context:
            context.attention(q, k, v, causal=problem.causal)
    bench.run_peer("cudnn", q, k, v, problem)
    torch.cuda.synchronize()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", default=["default"])
    parser.add_argument("--dtype", default="f16", choices=bench.DTYPE_NAMES)
    parser.add_argument("--shapes", nargs="+", type=shape_arg, default=list(SHAPES), metavar="B,Hq,Hkv,Sq,Sk[,causal]",
                        help="default: BENCH.md's two decode shapes")
    parser.add_argument("--head-dim", type=int, default=128, help="default 128")
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
    for shape in args.shapes:
        problem = problem_of(shape, args.dtype, args.head_dim)
        q, k, v = decode_inputs(shape, {"f16": torch.float16, "bf16": torch.bfloat16}[args.dtype], args.head_dim)
        peers = {}
        results = {}
        for name in bench.PEERS:
            peers[name], results[name] = bench.run_peer(name, q, k, v, problem)
        for config in ["default"] + [c for c in args.configs if c != "default"]:
            with context_for(config) as context:
                check, relative, results[config] = bench.run_ours(context, q, k, v, problem, peers)
                results[config]["check"] = check
                results[config]["relative_diff"] = relative   # run_ours also gives the kernel's name
        peer_ms = {name: results[name].get("ms") for name in bench.PEERS if name in results}
        print(f"\n{problem.describe()}: K+V {problem.kv_bytes() / 1e9:.2f} GB")
        for name, entry in results.items():
            if "ms" not in entry:
                print(f"  {name:32s} n/a: {entry.get('error')}")
                continue
            gbps = problem.kv_bytes() / entry["ms"] / 1e6
            entry["gbps"] = gbps
            ratios = "  ".join(f"{peer}/this {ms / entry['ms']:.3f}" for peer, ms in peer_ms.items() if ms)
            print(f"  {name:32s} {entry['ms'] * 1e3:8.1f} us  {gbps:6.0f} GB/s  {gbps / copy:5.1%} of copy  "
                  f"{ratios}  {entry.get('check', '')} {entry.get('kernel', '')}", flush=True)
        batch, heads_q, heads_kv, seqlen_q, seqlen_k, causal = shape
        rows.append({"batch": batch, "heads_q": heads_q, "heads_kv": heads_kv, "seqlen_q": seqlen_q,
                     "seqlen_k": seqlen_k, "causal": causal, "head_dim": args.head_dim, "dtype": args.dtype,
                     "copy_gbps": copy,
                     "results": results})
        del q, k, v, peers
        torch.cuda.empty_cache()
    if args.json:
        Path(args.json).write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
