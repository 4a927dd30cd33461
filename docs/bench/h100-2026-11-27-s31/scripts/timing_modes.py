"""One call's time four ways, ours against FA3 on the same tensors (session 31's diagnostic, not a
tool): A triton's do_bench (L2 flushed before each call: bench.py's figure); B the same by hand
(flush, start event, call, end event); C as B with the host waiting for the flush first (the GPU
idle when the call is launched); D 20 calls back to back between two events, no flush."""
import statistics
import sys

sys.path.insert(0, "tools")
import torch  # noqa: E402
import triton.testing  # noqa: E402

import bench  # noqa: E402
import check  # noqa: E402
import flashcore  # noqa: E402

ROWS = [("e4m3", 64, 16384, True), ("e4m3", 128, 4096, False), ("bf16", 64, 2048, True), ("bf16", 128, 16384, False)]
N = 30


def modes(fn):
    cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = {"A": triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")}
    for mode in "BC":
        times = []
        for _ in range(N):
            cache.zero_()
            if mode == "C":
                torch.cuda.synchronize()
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        out[mode] = statistics.median(times)
    times = []
    for _ in range(5):
        start.record()
        for _ in range(20):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 20)
    out["D"] = statistics.median(times)
    return out


def main():
    context = flashcore.Context(0)
    for dtype, d, s, causal in ROWS:
        b, h = 16384 // s, 2048 // d
        q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
        if dtype == "e4m3":
            codes, scales = check.e4m3_inputs(q, k, v, h)
            fns = {"ours": context.prepare(*codes, causal=causal, **scales),
                   "fa3": bench.fa3_call(*codes, causal=causal, **scales)}
        else:
            fns = {"ours": context.prepare(q, k, v, causal=causal), "fa3": bench.fa3_call(q, k, v, causal=causal)}
        for fn in fns.values():
            fn()
        torch.cuda.synchronize()
        print(f"{dtype} D{d} B{b} H{h} S{s} {'causal' if causal else 'no mask'}")
        got = {name: [] for name in fns}
        for _ in range(2):
            for name, fn in fns.items():
                got[name].append(modes(fn))
        for name, runs in got.items():
            print(f"  {name:4s} " + "  ".join(f"{m} {' / '.join('%.4f' % r[m] for r in runs)}" for m in "ABCD"))
        for m in "ABCD":
            ratio = min(r[m] for r in got["fa3"]) / min(r[m] for r in got["ours"])
            print(f"  {m}: fa3 / ours {ratio:.3f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
