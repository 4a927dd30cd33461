import sys, torch
who = sys.argv[1]
torch.manual_seed(0)
q = torch.randn(4, 4096, 32, 128, device='cuda', dtype=torch.bfloat16)
k, v = (torch.randn(4, 4096, 8, 128, device='cuda', dtype=torch.bfloat16) for _ in range(2))
if who == 'fa3':
    import fa3_fwd_interface
    f = lambda: fa3_fwd_interface.flash_attn_func(q, k, v, causal=True)
else:
    import flashcore
    print(flashcore.explain(q, k, v, causal=True), file=sys.stderr)
    f = lambda: flashcore.attention(q, k, v, causal=True)
for _ in range(3):
    f()
torch.cuda.synchronize()
