import sys
sys.path.insert(0, 'tools')  # run from the repository root
import bench, first_call, torch
rows = []
for shape in first_call.SHAPES:
    q, k, v = first_call.tensors(shape, torch.bfloat16)
    causal = shape[6]
    out = {}
    for n in (64, 80, 128):
        if n == 80 and shape[5] != 256: continue
        if n == 128 and shape[5] == 256: continue
        with bench.make_context(0, {"FC_FORCE_VARIANT": f"sm90:m64n{n}s2w4p0g0"}) as c:
            kern = c.plan(q, k, v, causal=causal)[0]
            o = c.attention(q, k, v, causal=causal)
            err, allowed = first_call.error(o, q, k, v, causal)
            out[kern] = (bench.measure_ms(lambda: c.attention(q, k, v, causal=causal)), err / allowed)
    print(shape[0], {k: (round(a, 4), round(b, 3)) for k, (a, b) in out.items()}, flush=True)
