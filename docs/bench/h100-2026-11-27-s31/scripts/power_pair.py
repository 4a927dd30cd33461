"""Energy per call, ours against FA3 on the same tensors (session 31's diagnostic, not a tool):
each implementation runs back to back for SECONDS while NVML is sampled (bench_report's sampler),
twice in turn; time per call = the window over the calls run in it; energy = power x time.
Rows: FP8 (e4m3, per-(batch, head) descales, as bench_fp8.py) and bf16, B = 16k / S, H = 2048 / D.
FC_TEMPLATE_DIR picks ours' kernel sources as usual."""
import sys
import time

sys.path.insert(0, "tools")
import torch  # noqa: E402

import bench  # noqa: E402
import bench_report  # noqa: E402
import check  # noqa: E402
import flashcore  # noqa: E402

SECONDS = 3.0
ROWS = [("e4m3", 64, 16384, True), ("e4m3", 64, 16384, False), ("e4m3", 128, 4096, False),
        ("bf16", 128, 16384, False), ("bf16", 64, 2048, True)]


def window(fn, nvml):
    calls = [0]

    def counted():
        fn()
        calls[0] += 1
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    summary = bench_report.power_while_running(counted, nvml, SECONDS, 1.0, torch.cuda.synchronize)
    elapsed = time.perf_counter() - start
    summary["ms"] = 1e3 * elapsed / calls[0]
    summary["mj"] = summary.get("power_w", float("nan")) * summary["ms"]
    return summary


def main():
    nvml = bench_report.Nvml(0)
    if nvml.error:
        sys.exit(nvml.error)
    print("NVML:", nvml.source)
    context = flashcore.Context(0)
    for dtype, d, s, causal in ROWS:
        b, h = 16384 // s, 2048 // d
        q, k, v = (torch.randn(b, s, h, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
        if dtype == "e4m3":
            codes, scales = check.e4m3_inputs(q, k, v, h)
            ours = context.prepare(*codes, causal=causal, **scales)
            fa3 = bench.fa3_call(*codes, causal=causal, **scales)
        else:
            ours = context.prepare(q, k, v, causal=causal)
            fa3 = bench.fa3_call(q, k, v, causal=causal)
        kernel = context.plan(*(codes if dtype == "e4m3" else (q, k, v)), causal=causal)[0]
        results = {"ours": [], "fa3": []}
        for _ in range(2):
            for name, fn in (("ours", ours), ("fa3", fa3)):
                results[name].append(window(fn, nvml))
        print(f"{dtype} D{d} B{b} H{h} S{s} {'causal' if causal else 'no mask'} ({kernel})")
        for name, windows in results.items():
            for w in windows:
                print(f"  {name:4s} {w['ms']:.4f} ms/call  {w.get('power_w', 0):6.1f} W  SM {w.get('sm_clock_mhz', 0):6.0f} MHz"
                      f" (min {w.get('sm_clock_mhz_min', 0):.0f})  {w['mj']:.2f} mJ/call  {w.get('temperature_c_max', 0)} C")
        o = min(w["mj"] for w in results["ours"])
        f = min(w["mj"] for w in results["fa3"])
        ot = min(w["ms"] for w in results["ours"])
        ft = min(w["ms"] for w in results["fa3"])
        print(f"  energy ours / fa3 {o / f:.3f}, time ours / fa3 {ot / ft:.3f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
