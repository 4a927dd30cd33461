#!/usr/bin/env python3
"""Three 16-bit attention calls of ours or FA3's on the same inputs, for Nsight Compute (`-c 1
--launch-skip 2` takes the third launch):
    python3 once16.py ours|fa3 B HQ HKV S D causal(0/1) [f16|bf16]"""
import sys

import torch

which, b, hq, hkv, s, d, c = sys.argv[1], *map(int, sys.argv[2:8])
dtype = torch.float16 if len(sys.argv) > 8 and sys.argv[8] == "f16" else torch.bfloat16
torch.manual_seed(0)
q = torch.randn(b, s, hq, d, device="cuda", dtype=dtype)
k, v = (torch.randn(b, s, hkv, d, device="cuda", dtype=dtype) for _ in range(2))
if which == "ours":
    import flashcore
    call = flashcore.Context().prepare(q, k, v, causal=bool(c))
else:
    import fa3_fwd_interface
    qb, kb, vb = (x.to(torch.bfloat16) for x in (q, k, v))
    call = lambda: fa3_fwd_interface.flash_attn_func(qb, kb, vb, causal=bool(c))  # noqa: E731
for _ in range(3):
    call()
torch.cuda.synchronize()
print(which, "ok")
