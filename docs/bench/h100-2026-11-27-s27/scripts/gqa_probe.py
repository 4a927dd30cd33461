#!/usr/bin/env python3
"""Session 27 probe: ours (several variants) and FA3 on GQA prefill shapes and their twins, timed
in alternation on the same tensors, medians of rounds."""
import statistics, sys, os
from pathlib import Path
sys.path.insert(0, str(Path("tools").resolve()))
import bench, flashcore, torch

dev = torch.device("cuda:0")
shapes = [  # batch, hq, hkv, s
    (4, 32, 8, 4096), (4, 32, 32, 4096), (4, 16, 16, 4096), (8, 16, 16, 4096), (4, 32, 4, 4096),
    (1, 64, 8, 8192), (1, 64, 64, 8192), (2, 16, 16, 8192),
]
variants = {"sel": None, "p0": "sm90:m128n192s2w12p0", "n128p1": "sm90:m128n128s2w12p1"}
ctx = {name: bench.make_context(0, env={"FC_FORCE_VARIANT": v}) for name, v in variants.items()}
rounds = int(os.environ.get("ROUNDS", "5"))
for b, hq, hkv, s in shapes:
    p = bench.Problem("probe", "bf16", b, hq, hkv, s, s, 128, True)
    q, k, v = bench.problem_tensors(p, dev)
    launches = {}
    for name, c in ctx.items():
        l = c.prepare(q, k, v, causal=True, out=torch.empty_like(q)); l(); launches[name] = l
    fa3 = bench.fa3_call(q, k, v, causal=True); ref = fa3()
    launches["fa3"] = fa3
    torch.cuda.synchronize()
    for name in ctx:
        d = (launches[name].out.float() - ref.float()).abs().max().item()
        assert d < 0.05, (name, d)
    t = bench.alternated(launches, rounds)
    med = {n: statistics.median(x) for n, x in t.items()}
    fl = p.flops()
    line = " ".join(f"{n} {med[n]*1e3:8.1f}us {fl/med[n]/1e9:5.0f}TF" for n in launches)
    ratio = " ".join(f"fa3/{n} {statistics.median(f/o for f, o in zip(t['fa3'], t[n])):.3f}" for n in ctx)
    print(f"B{b} Hq{hq} Hkv{hkv} S{s} causal: {line} | {ratio}", flush=True)
