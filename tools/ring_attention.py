"""Context-parallel (ring) attention over torch.distributed, with flashcore.attention and
flashcore.merge: a long sequence split across P GPUs, K/V passed around the ring.

The sequence is cut into 2P chunks and rank r holds two of them, r and 2P - 1 - r (the "zigzag"
layout), as its local queries, keys and values ([B, S/P, H, D] each, chunk r then chunk 2P-1-r):
under a causal mask every rank then has the same work at every step. At step t it attends its
queries to the K/V of rank s = (r - t) mod P, which its left neighbour sent it while the step before
ran, and merges that partial result into its running (out, lse) through their log-sum-exps
(flashcore.merge). Causal, by chunk order (S_q = S_k, so bottom-right = top-left):
  - s = r: the local sequence's own causal attention (chunk r sees itself causally and nothing of
    chunk 2P-1-r; chunk 2P-1-r sees all of chunk r and itself causally): one causal call;
  - s < r: chunk s precedes both of rank r's chunks and chunk 2P-1-s follows both: all local
    queries against s's first half, no mask;
  - s > r: both of s's chunks lie between rank r's two: its second chunk's queries against all of
    s's keys, no mask; its first chunk sees nothing.
Each step is one call over 2 (S/2P)^2 query-key pairs on every rank. Split contiguously instead
(rank r holding chunk r of P), the last rank did (2P - 1) / P^2 of the work and the ring could not
go past P^2 / (2P - 1) times one GPU's speed (1.33x on 2 GPUs; docs/PERF_NOTES.md v20). The ring
itself is torch.distributed's (NCCL send/recv), not the library's.

    torchrun --nproc-per-node 2 tools/ring_attention.py --seqlen 65536 --causal   # P GPUs, timed
    python3 tools/ring_attention.py --simulate 4 --seqlen 8192 --causal          # P ranks in turn
                                                                                  # on one GPU
Each run checks sampled query rows of the gathered result against an fp64 reference over the whole
sequence by BENCH.md's rule (max |out - ref| <= 2 err_pt + 1e-5, err_pt being PyTorch's own error
in the input dtype on those rows; LSE within 1e-3), and, with several GPUs, times the ring against
flashcore.attention of the whole sequence on one GPU (median of CUDA-event timings).
"""
import argparse
import json
import math
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import package_path  # noqa: E402

package_path.use_repository_package_if_built()
import flashcore  # noqa: E402
import check  # noqa: E402  (the fp64 reference and BENCH.md's constants)

CHECK_ROWS = 256   # sampled query rows judged against the fp64 reference


def rank_chunks(rank, ranks):
    """The two of the sequence's 2P chunks rank holds, in its local order (the zigzag layout)."""
    return rank, 2 * ranks - 1 - rank


def local_part(x, rank, ranks):
    """Rank's local copy of x [B, S, ...]: its two chunks along dim 1, one after the other."""
    import torch

    chunks = x.chunk(2 * ranks, dim=1)
    return torch.cat([chunks[c] for c in rank_chunks(rank, ranks)], dim=1).contiguous()


def whole_sequence(parts, ranks, dim):
    """The inverse of local_part over every rank's part (each rank's result, rank order)."""
    import torch

    chunks = [None] * (2 * ranks)
    for rank, part in enumerate(parts):
        for chunk, piece in zip(rank_chunks(rank, ranks), part.chunk(2, dim=dim)):
            chunks[chunk] = piece
    return torch.cat(chunks, dim=dim)


def halves(result):
    """(out, lse) of both local chunks' queries as [first chunk's, second chunk's]."""
    out, lse = result
    half = out.shape[1] // 2
    return [(out[:, :half], lse[..., :half].contiguous()), (out[:, half:], lse[..., half:].contiguous())]


def ring_step_parts(q, k, v, source, rank, causal):
    """The partial results of rank's local queries against rank `source`'s local K/V (the
    module's docstring says which chunk sees which): [first chunk's, second chunk's], each an
    (out, lse) or None (sees none of those keys)."""
    if not causal or source == rank:
        return halves(flashcore.attention(q, k, v, causal=causal, return_lse=True))
    half = q.shape[1] // 2
    if source < rank:
        return halves(flashcore.attention(q, k[:, :half], v[:, :half], return_lse=True))
    return [None, flashcore.attention(q[:, half:], k, v, return_lse=True)]


def accumulate(running, parts):
    """running [(out, lse) or None, ...] of the local chunks, each merged with its part."""
    merged = []
    for mine, part in zip(running, parts):
        if part is None:
            merged.append(mine)
        else:
            merged.append(part if mine is None else flashcore.merge(*mine, *part))
    return merged


def joined(running):
    """This rank's (out, lse) over its local queries, from its chunks' results."""
    import torch

    return torch.cat([r[0] for r in running], dim=1), torch.cat([r[1] for r in running], dim=2)


def simulate(q, k, v, ranks, causal):
    """Every rank's loop, rank after rank, on one device: the ring's arithmetic without NCCL."""
    local = [[local_part(x, rank, ranks) for x in (q, k, v)] for rank in range(ranks)]
    outputs, lses = [], []
    for rank in range(ranks):
        running = [None, None]
        for step in range(ranks):
            source = (rank - step) % ranks
            running = accumulate(running, ring_step_parts(local[rank][0], local[source][1],
                                                          local[source][2], source, rank, causal))
        out, lse = joined(running)
        outputs.append(out)
        lses.append(lse)
    return whole_sequence(outputs, ranks, 1), whole_sequence(lses, ranks, 2)


def ring(q, k, v, causal):
    """This rank's (out, lse) over the whole sequence: its local q, k, v (local_part), K/V passed
    around the ring with NCCL while each step computes (the send of the next K/V overlaps this
    attention)."""
    import torch
    import torch.distributed as dist

    rank, ranks, group = dist.get_rank(), dist.get_world_size(), None
    send_to, receive_from = (rank + 1) % ranks, (rank - 1) % ranks
    current = torch.stack([k, v])   # one buffer: one send and one receive per step
    running = [None, None]
    for step in range(ranks):
        pending = None
        if step + 1 < ranks:
            incoming = torch.empty_like(current)
            pending = dist.batch_isend_irecv([
                dist.P2POp(dist.isend, current, send_to, group),
                dist.P2POp(dist.irecv, incoming, receive_from, group)])
        source = (rank - step) % ranks
        running = accumulate(running, ring_step_parts(q, current[0], current[1], source, rank, causal))
        if pending is not None:
            for request in pending:
                request.wait()
            current = incoming
    return joined(running)


def judge(q, k, v, out, lse, causal, scale, seed):
    """Sampled rows of out/lse against the fp64 reference over all of k, v: (passed, row dict)."""
    import torch

    generator = torch.Generator(device="cpu").manual_seed(seed)
    seqlen = q.shape[1]
    rows = torch.randperm(seqlen, generator=generator)[:CHECK_ROWS].sort().values
    rows[0], rows[-1] = 0, seqlen - 1   # always the first and the last
    rows = rows.unique().to(q.device)
    keys = torch.arange(seqlen, device=q.device)
    visible = (keys[None, :] <= rows[:, None]) if causal else torch.ones(
        len(rows), seqlen, dtype=torch.bool, device=q.device)
    ref_out, ref_lse, err_pt, has_key = check.reference(q[:, rows], k, v, None, scale,
                                                        visible=visible)
    err = check.max_abs_diff(out[:, rows], ref_out)
    lse_err = check.max_abs_diff(lse[:, :, rows][:, :, has_key], ref_lse[:, :, has_key])
    bound = check.ERROR_FACTOR * err_pt + check.ERROR_SLACK
    finite = bool(torch.isfinite(out).all())
    passed = finite and err <= bound and lse_err <= check.LSE_TOLERANCE
    return passed, {"rows_checked": len(rows), "err": err, "err_pt": err_pt, "lse_err": lse_err,
                    "finite": finite, "passed": passed}


def time_ms(fn, iterations):
    import torch

    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seqlen", type=int, default=65536)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--heads-kv", type=int, default=None, help="default: --heads")
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--dtype", choices=("f16", "bf16"), default="bf16")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--simulate", type=int, metavar="P",
                        help="P ranks in turn on one GPU (no NCCL)")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    import torch

    dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    heads_kv = args.heads_kv or args.heads
    distributed = args.simulate is None
    if distributed:
        import torch.distributed as dist

        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        dist.init_process_group("nccl", device_id=torch.device("cuda", local))
        rank, ranks = dist.get_rank(), dist.get_world_size()
    else:
        rank, ranks = 0, args.simulate
    if args.seqlen % (2 * ranks):
        parser.error(f"--seqlen {args.seqlen} is not a multiple of 2 x {ranks} ranks (each holds two chunks)")
    torch.manual_seed(args.seed)   # every rank draws the same whole tensors, then keeps its chunk
    shape_q = (args.batch, args.seqlen, args.heads, args.head_dim)
    shape_kv = (args.batch, args.seqlen, heads_kv, args.head_dim)
    q, k, v = (torch.randn(shape, dtype=dtype, device="cuda")
               for shape in (shape_q, shape_kv, shape_kv))
    scale = 1.0 / math.sqrt(args.head_dim)
    result = {"seqlen": args.seqlen, "ranks": ranks, "causal": args.causal, "dtype": args.dtype,
              "batch": args.batch, "heads": args.heads, "heads_kv": heads_kv,
              "head_dim": args.head_dim, "gpu": torch.cuda.get_device_name(),
              "mode": "simulated" if not distributed else "nccl", "layout": "zigzag"}
    if not distributed:
        out, lse = simulate(q, k, v, ranks, args.causal)
    else:
        mine = [local_part(x, rank, ranks) for x in (q, k, v)]
        out_mine, lse_mine = ring(*mine, args.causal)
        outs = [torch.empty_like(out_mine) for _ in range(ranks)]
        lses = [torch.empty_like(lse_mine) for _ in range(ranks)]
        dist.all_gather(outs, out_mine.contiguous())
        dist.all_gather(lses, lse_mine.contiguous())
        out, lse = whole_sequence(outs, ranks, 1), whole_sequence(lses, ranks, 2)
    passed, checked = judge(q, k, v, out, lse, args.causal, scale, args.seed)
    result.update(checked)
    if distributed:
        def one_gpu():
            return flashcore.attention(q, k, v, causal=args.causal)

        def on_the_ring():
            ring(*mine, args.causal)
            dist.barrier(device_ids=[torch.cuda.current_device()])

        result["one_gpu_ms"] = time_ms(one_gpu, args.iterations) if rank == 0 else None
        dist.barrier()
        result["ring_ms"] = time_ms(on_the_ring, args.iterations)
        if rank == 0:
            result["speedup"] = result["one_gpu_ms"] / result["ring_ms"]
    if rank == 0:
        print(json.dumps(result), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    if distributed:
        dist.destroy_process_group()
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
