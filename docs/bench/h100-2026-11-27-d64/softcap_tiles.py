"""Session 23 experiment (issue 14): softcap at head_dim 128 on other key tiles (176 and 192 keys)
against the default tiles, in one process on the same tensors; FA3 with and without softcap. Its first
form (softcap-turns.*) had three consumers of 64 keys instead (README). Run from the repository root."""
import json, os, sys
sys.path.insert(0, "tools")
import bench, bench_masks as bm
import flashcore, torch

def context(forced=None):
    if forced:
        os.environ["FC_FORCE_VARIANT"] = forced
    try:
        return flashcore.Context(0)
    finally:
        os.environ.pop("FC_FORCE_VARIANT", None)

ctxs = {"default": context(), "n176": context("sm90:m128n176s2w12p1"), "n192": context("sm90:m128n192s2w12p1")}
rows = []
shapes = [(128, s) for s in (1024, 2048, 4096, 8192, 16384)]
for d, s in shapes:
    for causal in (False, True):
        heads = 2048 // d
        q, k, v, _ = bm.tensors("bf16", 16384 // s, heads, s, d)
        row = {"head_dim": d, "seqlen": s, "causal": causal}
        plain, plain_out, row["plain_kernel"] = bm.ours(ctxs["default"], q, k, v, causal=causal)
        row["plain_ms"] = bench.measure_ms(plain)
        for name, c in ctxs.items():
            call, out, kernel = bm.ours(c, q, k, v, causal=causal, softcap=bm.SOFTCAP)
            if name == "default":
                ref = out
            row[f"cap_{name}"] = {"kernel": kernel, "ms": bench.measure_ms(call), **bench.match(out, ref)}
        if d == 128:
            call, out, kernel = bm.ours(ctxs["n176"], q, k, v, causal=causal)
            row["plain_n176"] = {"kernel": kernel, "ms": bench.measure_ms(call), **bench.match(out, plain_out)}
        row["fa3_cap"] = bm.peer_entry(lambda: bm.fa3_softcap(q, k, v, causal, bm.SOFTCAP), ref)
        row["fa3_plain"] = bm.peer_entry(lambda: bm.fa3_softcap(q, k, v, causal, 0.0), plain_out)
        rows.append(row)
        cells = [f"{k}={v['ms']/row['plain_ms']-1:+.1%}({v.get('check')})" for k, v in row.items() if isinstance(v, dict) and 'ms' in v]
        print(f"d{d} s{s} c{int(causal)} plain {row['plain_ms']:.3f} ms {row['plain_kernel']}: " + " ".join(cells), flush=True)
        del q, k, v
json.dump(rows, open(os.path.join(os.environ.get("OUT", "/tmp"), "softcap-n176.json"), "w"), indent=1)
