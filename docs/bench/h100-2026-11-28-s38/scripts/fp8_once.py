#!/usr/bin/env python3
"""One FP8 attention call of ours or cuDNN's (cudnn-frontend's sdpa_fp8), for Nsight Compute:
    python3 fp8_once.py ours|cudnn B H S D [causal]
bf16 N(0, 1) inputs quantized as tools/bench_fp8.py does (ours per (batch, head), cuDNN per tensor)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tools"))
import bench_fp8  # noqa: E402
import check  # noqa: E402
import torch  # noqa: E402

which, batch, heads, seqlen, head_dim = sys.argv[1], *map(int, sys.argv[2:6])
causal = len(sys.argv) > 6 and sys.argv[6] == "causal"
torch.manual_seed(0)
q, k, v = (torch.randn(batch, seqlen, heads, head_dim, dtype=torch.bfloat16, device="cuda") for _ in range(3))
if which == "ours":
    import flashcore
    codes, scales = check.e4m3_inputs(q, k, v, heads)
    call = flashcore.Context().prepare(*codes, causal=causal, **scales)
else:
    cudnn, handle = bench_fp8.cudnn_module()
    codes, scales = check.e4m3_inputs(q, k, v, heads, per_tensor=True)
    call = bench_fp8.CudnnFp8(cudnn, handle, *codes, [scales[f"{n}_descale"] for n in "qkv"], causal)
for _ in range(3):
    call()
torch.cuda.synchronize()
print(which, "ok")
