# session 35: NVRTC alone on the device host: a quick kernel's compile alone and beside its planned kernel's
import sys, threading, time, glob
sys.path.insert(0, 'tools')
import compile_time as ct
nv = ct.load_nvrtc()
pairs = [('d128_m64n64', 'd128_m128n128'), ('d128_causal_m64n64', 'd128_causal_m128n128'), ('d64_m64n128', 'd64_m128n128'), ('d256_m64n80', 'd256_m128n80')]
ct.compile_once(nv, glob.glob('.carry-src/*.cu')[0], [], 'sm_90a', False)
def t(path, out, key):
    s = time.perf_counter(); ct.compile_once(nv, path, [], 'sm_90a', False); out[key] = round(1e3 * (time.perf_counter() - s))
for qn, pn in pairs:
    q = glob.glob(f'.carry-src/sm90_bf16_{qn}s2w4_sm_90a.cu')[0]; p = glob.glob(f'.carry-src/sm90_bf16_{pn}s2w12p_sm_90a.cu')[0]
    for rep in range(3):
        out = {}
        t(q, out, 'quick alone'); t(p, out, 'planned alone')
        th = threading.Thread(target=t, args=(p, out, 'planned beside')); th.start()
        t(q, out, 'quick beside'); th.join()
        print(qn, out, flush=True)
