"""Paged attention written in torch from src/flashcore.h's words, as a Context-like object for
tools/check_paged.py's run_case and run_graph_case: it checks the tool itself (CUDA tensors, the
poisoning, the judge, graph capture and replays with new page tables) on a GPU whatever the library
takes, and, on the CPU, agrees with the tool's reference. Every step is a device op (no host
synchronization), so it is captured in a CUDA graph like the library's call. fp32 arithmetic.
"""
import math

import torch

CHUNK = 128


class TorchPagedContext:
    """attention() and plan() as check_paged calls them; off: added to every output (a wrong one)."""

    def __init__(self, device=0, off=0.0):
        self.device, self.off = device, off

    def plan(self, *args, **kwargs):
        return ("torch-paged", "", 1)

    def attention(self, q, k, v, out=None, lse=None, causal=False, page_table=None, seqused_k=None,
                  cu_seqlens_q=None, max_seqlen_q=None, max_seqlen_k=None):
        page_size, width = k.shape[1], page_table.shape[1]
        seqlen_k = max_seqlen_k or width * page_size
        batch = page_table.shape[0]
        heads_q, head_dim, heads_kv = q.shape[-2], q.shape[-1], k.shape[2]
        group = heads_q // heads_kv
        table = page_table.long()
        kf = k[table].reshape(batch, width * page_size, heads_kv, head_dim)
        vf = v[table].reshape(batch, width * page_size, heads_kv, head_dim)
        used = seqused_k.long() if seqused_k is not None else torch.full((batch,), seqlen_k, device=q.device)
        if cu_seqlens_q is None:
            seqlen_q = q.shape[1]
            qt = q.reshape(-1, heads_q, head_dim)
            tokens = torch.arange(qt.shape[0], device=q.device)
            seq, row, len_q = tokens // seqlen_q, tokens % seqlen_q, torch.full_like(tokens, seqlen_q)
            inside = torch.ones_like(tokens, dtype=torch.bool)
        else:
            qt = q
            tokens = torch.arange(qt.shape[0], device=q.device)
            cu = cu_seqlens_q.long()
            seq = torch.searchsorted(cu[1:], tokens, right=True).clamp(max=batch - 1)
            row, len_q = tokens - cu[seq], cu[seq + 1] - cu[seq]
            inside = tokens < cu[batch]
        scale = float(torch.tensor(1.0 / math.sqrt(head_dim), dtype=torch.float32))   # the library's fp32
        keys = torch.arange(width * page_size, device=q.device)
        outs, lses = [], []
        for first in range(0, qt.shape[0], CHUNK):
            part = slice(first, first + CHUNK)
            b, i, n_q = seq[part], row[part], len_q[part]
            n_k = used[b]
            valid = keys[None, :] < n_k[:, None]
            if causal:
                valid &= keys[None, :] <= (i + n_k - n_q)[:, None]
            kt = kf[b].repeat_interleave(group, dim=2).float()      # [t, K, Hq, D]
            vt = vf[b].repeat_interleave(group, dim=2).float()
            vt = torch.where(valid[:, :, None, None], vt, 0.0)
            s = torch.einsum("thd,tkhd->thk", qt[part].float(), kt) * scale
            s = s.masked_fill(~valid[:, None, :], -math.inf)
            m = s.amax(-1, keepdim=True)
            has = valid.any(-1)[:, None, None]
            m = torch.where(has, m, 0.0)
            p = torch.exp(s - m)
            total = p.sum(-1, keepdim=True)
            o = torch.einsum("thk,tkhd->thd", p, vt) / torch.where(has, total, 1.0)
            outs.append(torch.where(has, o, 0.0) + self.off)
            lses.append(torch.where(has, m + total.log(), -math.inf).squeeze(-1))
        o, l = torch.cat(outs), torch.cat(lses)                     # [T, Hq, D], [T, Hq]
        if cu_seqlens_q is None:
            out.copy_(o.reshape(out.shape).to(out.dtype))
            if lse is not None:
                lse.copy_(l.reshape(q.shape[0], q.shape[1], heads_q).permute(0, 2, 1))
        else:
            out.copy_(torch.where(inside[:, None, None], o.to(out.dtype), out))
            if lse is not None:
                lse.copy_(torch.where(inside[None, :], l.t(), lse))
        return out

