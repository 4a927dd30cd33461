"""tools/ring_attention.py's arithmetic without a GPU: flashcore.attention and flashcore.merge are
replaced by float64 stand-ins (tools/check.py's reference, and the merge rule), and the ring's
zigzag layout, simulated on P = 1 to 4 ranks, must give attention over the whole sequence (causal
and not), with the same work on every rank at every step under a causal mask."""
import math
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import check  # noqa: E402
import ring_attention  # noqa: E402


def attention64(q, k, v, causal=False, return_lse=False):
    """tools/check.py's float64 reference ([B, S, H, D] in and out, LSE [B, H, Sq]; causal
    bottom-right aligned) as the library's attention."""
    out, lse, _, _ = check.reference(q, k, v, causal, 1.0 / math.sqrt(q.shape[-1]))
    return (out, lse) if return_lse else out


def merge64(out_a, lse_a, out_b, lse_b):
    """flashcore.merge's rule in float64."""
    lse = torch.logaddexp(lse_a, lse_b)
    weight = lambda part: torch.exp(part - lse).transpose(1, 2)[..., None]   # noqa: E731  [B, S, H, 1]
    return weight(lse_a) * out_a + weight(lse_b) * out_b, lse


@pytest.fixture
def float64_library(monkeypatch):
    """ring_attention's flashcore calls, in float64, each call's query-key pairs counted."""
    calls = []

    def counted_attention(q, k, v, causal=False, return_lse=False):
        pairs = q.shape[1] * k.shape[1]
        calls.append(pairs // 2 if causal else pairs)
        return attention64(q, k, v, causal=causal, return_lse=return_lse)

    monkeypatch.setattr(ring_attention.flashcore, "attention", counted_attention, raising=False)
    monkeypatch.setattr(ring_attention.flashcore, "merge", merge64, raising=False)
    return calls


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
@pytest.mark.parametrize("causal", [True, False])
def test_simulated_ring_is_attention_over_the_whole_sequence(float64_library, ranks, causal):
    torch.manual_seed(ranks)
    q, k, v = (torch.randn(2, 16 * ranks, 3, 8, dtype=torch.float64) for _ in range(3))
    out, lse = ring_attention.simulate(q, k, v, ranks, causal)
    ref_out, ref_lse = attention64(q, k, v, causal=causal, return_lse=True)
    assert out.shape == ref_out.shape and lse.shape == ref_lse.shape
    assert torch.allclose(out, ref_out, rtol=0, atol=1e-12)
    assert torch.allclose(lse, ref_lse, rtol=0, atol=1e-12)


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_causal_ring_gives_every_rank_the_same_work_at_every_step(float64_library, ranks):
    seqlen = 16 * ranks
    q, k, v = (torch.randn(1, seqlen, 1, 4, dtype=torch.float64) for _ in range(3))
    ring_attention.simulate(q, k, v, ranks, causal=True)
    chunk = seqlen // (2 * ranks)
    # one call a step on every rank, each 2 chunk^2 query-key pairs (the diagonal's causal
    # call over the local 2 chunks counts half of its (2 chunk)^2)
    assert float64_library == [2 * chunk * chunk] * (ranks * ranks)
    assert sum(float64_library) == seqlen * seqlen // 2


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_local_parts_put_back_together_are_the_sequence(ranks):
    x = torch.arange(2 * 12 * ranks).reshape(2, 12 * ranks)
    parts = [ring_attention.local_part(x, rank, ranks) for rank in range(ranks)]
    assert [tuple(ring_attention.rank_chunks(r, ranks)) for r in range(ranks)] == \
        [(r, 2 * ranks - 1 - r) for r in range(ranks)]
    assert torch.equal(ring_attention.whole_sequence(parts, ranks, 1), x)
