"""Session 23: do_bench (BENCH.md's timing) against CUPTI kernel durations (torch.profiler), per peer,
on the same rows: does any peer's host time or launch pattern leak into its bench time?"""
import json, os, sys, statistics
sys.path.insert(0, "tools")
import bench, flashcore, torch
from torch.profiler import profile, ProfilerActivity

calls = []
orig = bench.measure_ms
cache = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")

def kernel_ms(fn, n=40):
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            cache.zero_()
            fn()
        torch.cuda.synchronize()
    names = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        if "fill" in e.name.lower() or "memset" in e.name.lower():
            continue
        names.setdefault(e.name[:60], []).append(e.time_range.elapsed_us() / 1e3)
    total = sum(sum(v) for v in names.values()) / n
    main = max(names.items(), key=lambda kv: sum(kv[1]))
    return total, statistics.median(main[1]), {k: (len(v), sum(v) / len(v)) for k, v in names.items()}

def measure(fn):
    ms = orig(fn)
    total, main_median, kinds = kernel_ms(fn)
    calls.append({"bench_ms": ms, "kernel_ms_per_call": total, "main_kernel_median_ms": main_median, "kernels": kinds})
    return ms

bench.measure_ms = measure
ctx = flashcore.Context(0)
P = bench.Problem
problems = [P("sweep", "bf16", 2, 32, 32, 8192, 8192, 64, True), P("sweep", "bf16", 8, 16, 16, 2048, 2048, 128, True),
            P("sweep", "bf16", 1, 16, 16, 16384, 16384, 128, False), P("sweep", "bf16", 32, 16, 16, 512, 512, 128, False),
            P("sweep", "bf16", 4, 32, 32, 4096, 4096, 64, False), P("gqa", "bf16", 4, 32, 8, 4096, 4096, 128, True),
            P("sweep", "bf16", 1, 8, 8, 16384, 16384, 256, False), P("sweep", "bf16", 4, 16, 16, 4096, 4096, 128, True)]
out = []
for p in problems:
    calls.clear()
    row = bench.run_problem(ctx, p, "cuda")
    names = [n for n in ("flash", "cudnn", "fa3", "ours") if "ms" in row["results"].get(n, {})]
    rec = {"problem": p._asdict(), "by_peer": dict(zip(names, list(calls)))}
    out.append(rec)
    line = " ".join(f"{n}: bench {c['bench_ms']:.3f} kern {c['kernel_ms_per_call']:.3f} (main {c['main_kernel_median_ms']:.3f})"
                    for n, c in rec["by_peer"].items())
    print(f"{p.dtype} B{p.batch} H{p.heads_q}/{p.heads_kv} S{p.seqlen_q} d{p.head_dim} c{int(p.causal)}: {line}", flush=True)
json.dump(out, open(os.path.join(os.environ.get("OUT", "/tmp"), "prof-vs-bench.json"), "w"), indent=1)
