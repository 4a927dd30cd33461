#!/usr/bin/env python3
"""PERF_NOTES v42.5's next (1), prepared in session 42 (not run: no device time left). Whether the
two consumer warpgroups' softmaxes (each tile's row max and exponentials) of the FP8 head_dim 128
kernel run at the same time, sharing the SFU, or take turns.

    python3 exp_stamps.py run TEMPLATES B H S D > stamps.log   # FC_TEMPLATE_DIR=TEMPLATES (exp-stamps.patch
                                                             # applied): two FP8 calls, the kernel prints
    python3 exp_stamps.py read stamps.log                      # the overlap, CTA by CTA

exp-stamps.patch stamps %clock64 at each softmax's start and end (lane 0 of each warpgroup), and
the CTAs 0-7 print their first row block's stamps. For each consumer-1 softmax window, the share of
it during which a consumer-0 softmax also ran; its median over the tiles and CTAs is the number:
above 0.5, give the exponentials turns (predicted +5-9%); under 0.3, do not build it."""
import os
import statistics
import sys
from pathlib import Path


def run(templates, batch, heads, seqlen, head_dim):
    os.environ["FC_TEMPLATE_DIR"] = templates
    sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tools"))
    import check  # noqa: E402
    import flashcore  # noqa: E402
    import torch  # noqa: E402

    torch.manual_seed(0)
    q, k, v = (torch.randn(batch, seqlen, heads, head_dim, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    codes, scales = check.e4m3_inputs(q, k, v, heads)
    with flashcore.Context(0, no_disk_cache=True) as context:
        print("kernel", context.plan(*codes, **scales)[0], flush=True)
        for _ in range(2):
            context.attention(*codes, **scales)
            torch.cuda.synchronize()


def read(path):
    windows = {}   # (cta, group, tile) -> (start, end); the last call's
    for line in Path(path).read_text().splitlines():
        parts = line.split()
        if len(parts) == 6 and parts[0] == "stamp":
            cta, group, tile, start, end = map(int, parts[1:])
            windows[cta, group, tile] = (start, end)
    shares, lengths = [], {0: [], 1: []}
    for cta in sorted({key[0] for key in windows}):
        zero = sorted(w for (c, g, _), w in windows.items() if c == cta and g == 0)
        one = sorted(w for (c, g, _), w in windows.items() if c == cta and g == 1)
        for g, ws in ((0, zero), (1, one)):
            lengths[g] += [end - start for start, end in ws]
        for start, end in one:
            overlap = sum(max(0, min(end, e0) - max(start, s0)) for s0, e0 in zero)
            shares.append(overlap / max(1, end - start))
    if not shares:
        print("no stamps in", path)
        return 1
    print(f"{len(shares)} consumer-1 softmaxes; share overlapped by consumer 0's: median "
          f"{statistics.median(shares):.2f} (quartiles {statistics.quantiles(shares, n=4)[0]:.2f}-"
          f"{statistics.quantiles(shares, n=4)[2]:.2f}); softmax cycles median: consumer 0 "
          f"{statistics.median(lengths[0]):.0f}, consumer 1 {statistics.median(lengths[1]):.0f}")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], *map(int, sys.argv[3:7]))
    else:
        sys.exit(read(sys.argv[2]))
