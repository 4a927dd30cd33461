"""The measurement tools' pure parts without a GPU: bench_masks.py's same-tiles plain call (the
forced variant it derives from a capped kernel's name) and its overheads over alternated rounds,
ab_rounds.py's arguments (its FP8 rows and template folders too), bench.alternated's order (and its
contexts), bench.py's --rounds (medians of times and of ratios),
check.e4m3_inputs' quantization and sass_loops.py's reading of SASS listings and ptxas reports."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import ab_rounds  # noqa: E402
import bench_masks  # noqa: E402
import sass_loops  # noqa: E402


@pytest.mark.parametrize("kernel, force", [
    ("sm90_bf16_d128_cap_m128n128s2w12p_sm_90a", "sm90:m128n128s2w12p1"),
    ("sm90_f16_d64_causal_cap_m192n128s2w16_sm_90a", "sm90:m192n128s2w16p0"),
    ("sm90_bf16_d256_causal_cap_m128n80s2w12p_sm_90a", "sm90:m128n80s2w12p1"),
    ("sm80_bf16_d128_causal_cap_m128n64s2w4_sm_80", None),      # not the Hopper kernel
    ("decode_bf16_d128_causal_cap_m16n64s2w4_sm_80", None),
    ("reference_bf16_d128_causal_cap_m16n32s1w4_sm_90a", None),
])
def test_forced_tiles_reads_the_hopper_kernels_tiles(kernel, force):
    assert bench_masks.forced_tiles(kernel) == force


def test_uncapped_name_drops_only_the_softcap_switch():
    assert bench_masks.uncapped_name("sm90_bf16_d128_cap_m128n128s2w12p_sm_90a") == \
        "sm90_bf16_d128_m128n128s2w12p_sm_90a"
    assert bench_masks.uncapped_name("sm90_bf16_d128_causal_win_cap_m128n128s2w12p_sm_90a") == \
        "sm90_bf16_d128_causal_win_m128n128s2w12p_sm_90a"
    assert bench_masks.uncapped_name("sm90_bf16_d128_m128n192s2w12p_sm_90a") == "sm90_bf16_d128_m128n192s2w12p_sm_90a"


def test_ab_rounds_takes_a_template_folder_as_its_baseline():
    args = ab_rounds.parse_args(["--baseline-templates", "/some/kernel_templates", "--softcap", "30"])
    assert args.baseline_templates == "/some/kernel_templates" and args.softcap == 30.0
    with pytest.raises(SystemExit):   # nothing to compare with
        ab_rounds.parse_args(["--softcap", "30"])


def test_ab_rounds_takes_fp8_rows_and_refuses_other_dtypes():
    args = ab_rounds.parse_args(["--baseline-templates", "/t", "--dtypes", "e4m3", "--dims", "64"])
    assert args.dtypes == "e4m3"
    with pytest.raises(SystemExit):
        ab_rounds.parse_args(["--baseline-templates", "/t", "--dtypes", "bf16,fp8"])


def test_ab_rounds_takes_a_template_folder_for_ours():
    args = ab_rounds.parse_args(["--ours-templates", "/changed/kernel_templates"])
    assert args.ours_templates == "/changed/kernel_templates" and args.baseline_templates is None


def test_bench_masks_overhead_is_the_median_of_the_rounds_ratios():
    assert bench_masks.overhead([1.10, 1.30, 1.00], [1.0, 1.0, 1.0]) == pytest.approx(0.10)
    assert bench_masks.overhead([2.0], [1.6]) == pytest.approx(0.25)
    assert bench_masks.parse_args([]).rounds == 3
    with pytest.raises(SystemExit):
        bench_masks.parse_args(["--rounds", "0"])


def test_alternated_times_each_launch_once_a_round_in_turn(monkeypatch):
    import bench

    order = []
    monkeypatch.setattr(bench, "measure_ms", lambda fn: fn())
    launches = {"a": lambda: order.append("a") or 1.0, "b": lambda: order.append("b") or 2.0}
    assert bench.alternated(launches, 3) == {"a": [1.0] * 3, "b": [2.0] * 3}
    assert order == ["a", "b"] * 3


def test_e4m3_inputs_quantizes_q_k_and_v_per_kv_head():
    torch = pytest.importorskip("torch")
    import check

    q, k, v = torch.randn(2, 8, 4, 64), torch.randn(2, 8, 2, 64), torch.randn(2, 8, 2, 64)
    codes, scales = check.e4m3_inputs(q, k, v, 2)
    assert [c.dtype for c in codes] == [torch.float8_e4m3fn] * 3
    assert sorted(scales) == ["k_descale", "q_descale", "v_descale"]
    assert all(d.shape == (2, 2) for d in scales.values())
    restored = codes[1].float() * scales["k_descale"][:, None, :, None]
    assert torch.allclose(restored, k, rtol=0.07, atol=1e-3)   # e4m3: 3 mantissa bits
    _, one = check.e4m3_inputs(q, k, v, 2, per_tensor=True)
    assert torch.unique(one["q_descale"]).numel() == 1


def test_check_takes_the_environments_forced_variant(monkeypatch):
    """FC_FORCE_VARIANT=V tools/check.py checks V (as tools/gpu-host.sh's `variants` runs it), not
    the selector's choice; --families overrides it; without either, the selector's choice."""
    pytest.importorskip("torch")
    import check

    monkeypatch.setenv("FC_FORCE_VARIANT", "sm90:m64n64s2w4")
    assert check.parse_args([]).families == ["sm90:m64n64s2w4"]
    assert check.parse_args(["--families", "sm80,reference"]).families == ["sm80", "reference"]
    monkeypatch.delenv("FC_FORCE_VARIANT")
    assert check.parse_args([]).families == [None]
    monkeypatch.setenv("FC_FORCE_VARIANT", "")
    assert check.parse_args([]).families == [None]


def test_bench_rounds_take_medians_of_times_and_of_ratios(monkeypatch):
    import bench

    timings = {"fa3": iter([2.0, 3.0]), "ours": iter([2.5, 2.0])}   # rounds 2 and 3
    monkeypatch.setattr(bench, "measure_ms", lambda fn: fn())
    calls = {name: (lambda name=name: next(timings[name]), None) for name in ("fa3", "ours")}
    results = {"fa3": {"ms": 1.0}, "ours": {"ms": 1.0}, "flash": {"error": "not run"}}
    times = bench.later_rounds(results, calls, 3)
    assert times == {"fa3": [1.0, 2.0, 3.0], "ours": [1.0, 2.5, 2.0]}
    assert results["fa3"]["ms"] == 2.0 and results["ours"]["ms"] == 2.0
    assert results["fa3"]["rounds_ms"] == [1.0, 2.0, 3.0]
    # the rounds' ratios 1.0, 0.8, 1.5: their median, not the ratio of the medians (1.0)
    assert bench.round_ratio(times, "fa3") == pytest.approx(1.0)
    assert bench.round_ratio(times, "flash") is None


def test_bench_rounds_one_is_the_single_timing(monkeypatch):
    import bench

    monkeypatch.setattr(bench, "measure_ms", lambda fn: pytest.fail("no later round"))
    results = {"cudnn": {"ms": 3.0}, "ours": {"ms": 2.0}}
    times = bench.later_rounds(results, {"cudnn": (None, None), "ours": (None, None)}, 1)
    assert bench.round_ratio(times, "cudnn") == pytest.approx(1.5)
    assert bench.parse_args([]).rounds == 1
    with pytest.raises(SystemExit):
        bench.parse_args(["--rounds", "0"])


def test_alternated_runs_each_timing_under_its_context(monkeypatch):
    import contextlib

    import bench

    entered = []
    monkeypatch.setattr(bench, "measure_ms", lambda fn: entered.append(("timed", fn())) or 1.0)

    @contextlib.contextmanager
    def backend():
        entered.append("enter")
        yield
        entered.append("exit")

    bench.alternated({"a": lambda: "a", "b": lambda: "b"}, 1, {"a": backend, "b": None})
    assert entered == ["enter", ("timed", "a"), "exit", ("timed", "b")]


SASS = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;                /* 0x00000a00ff017b82 */
                                                                          /* 0x000fe20000000800 */
        /*0010*/                   WARPGROUP.ARRIVE ;                    /* 0x00000000000079cd */
                                                                          /* 0x000fe20000000000 */
        /*0020*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT ; /* 0x00e00000041879f0 */
                                                                          /* 0x000fe200087018ff */
        /*0030*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24, gsb0 ; /* 0x00e00000081879f0 */
                                                                          /* 0x000fe20008701818 */
        /*0040*/              @P0 BRA 0x10 ;                             /* 0x0000000000f00947 */
                                                                          /* 0x000fea000383ffff */
        /*0050*/                   BRA 0x60 ;                            /* 0x0000000000007947 */
                                                                          /* 0x000fc0000383ffff */
        /*0060*/                   EXIT ;                                /* 0x000000000000794d */
"""


def test_sass_loops_reads_a_listing_and_finds_its_backward_branches():
    instructions = sass_loops.parse_sass(SASS)
    assert [a for a, _ in instructions] == [0x0, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60]
    assert instructions[2][1].startswith("HGMMA.64x128x16")
    found = sass_loops.loops(instructions, min_gmma=2)
    assert found == [{"start": 0x10, "end": 0x40, "instructions": 4, "gmma": 2, "arrives": 1}]
    assert sass_loops.loops(instructions, min_gmma=3) == []   # the forward branch is no loop


def test_sass_loops_reads_ptxas_reports():
    text = """ptxas info    : (C7519) warpgroup.arrive is injected in around line 886 by compiler
ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized
    48 bytes stack frame, 144 bytes spill stores, 144 bytes spill loads
ptxas info    : Used 168 registers, used 16 barriers, 48 bytes cumulative stack size"""
    assert sass_loops.ptxas_report(text) == {"registers": 168, "spill_bytes": 144, "serialized": 1,
                                             "injected_arrives": 1}
    clean = sass_loops.ptxas_report("ptxas info    : Used 128 registers\n    0 bytes spill stores")
    assert clean["spill_bytes"] == 0 and clean["serialized"] == 0


def test_sass_loops_needs_a_spec():
    with pytest.raises(SystemExit):
        sass_loops.parse_args([])
    args = sass_loops.parse_args(["--spec", "s.yaml", "--against", "/t"])
    assert args.against == "/t" and args.min_gmma == 4 and args.fcjit == "build/tools/fcjit"
