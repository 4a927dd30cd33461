# session 35: where a cold first call's time goes on the device host (quick first call on and off)
import sys, time, os
sys.path.insert(0, 'tools')
import torch, flashcore
dt = torch.bfloat16
with flashcore.Context(0, no_disk_cache=True, quick_first_call=False) as c:   # NVRTC loaded
    x = torch.randn(1, 64, 2, 64, dtype=dt, device="cuda"); c.attention(x, x, x)
shapes = [("d128", 4, 4096, 16, 128, False), ("d128 causal", 4, 4096, 16, 128, True), ("d64", 4, 4096, 32, 64, False), ("d256", 4, 4096, 8, 256, False)]
for name, b, s, h, d, causal in shapes:
    q = torch.randn(b, s, h, d, dtype=dt, device="cuda"); k = torch.randn_like(q); v = torch.randn_like(q)
    for rep in range(3):
        for quick in (True, False):
            t0 = time.perf_counter()
            c = flashcore.Context(0, no_disk_cache=True, quick_first_call=quick, log_level="debug")
            t1 = time.perf_counter()
            c.plan(q, k, v, causal=causal)
            t2 = time.perf_counter()
            sys.stderr.write(f"--- {name} quick={quick} rep {rep}\n"); sys.stderr.flush()
            out = c.attention(q, k, v, causal=causal)
            t3 = time.perf_counter()
            torch.cuda.synchronize()
            t4 = time.perf_counter()
            c.wait_compiles(); t5 = time.perf_counter()
            c.close()
            print(f"{name:12s} quick={int(quick)} create {1e3*(t1-t0):6.1f} plan {1e3*(t2-t1):6.2f} call {1e3*(t3-t2):7.1f} sync {1e3*(t4-t3):6.1f} ready {1e3*(t5-t2):7.1f} ms", flush=True)
