"""tools/bench_report.py without a GPU: the plots and report.md from a small made-up bench.json,
and power summaries from a stand-in NVML. Plot tests skip where matplotlib is missing."""
import struct
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import bench  # noqa: E402
import bench_report  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def result(ms, problem, watts=None):
    entry = {"ms": ms, "tflops": problem.flops() / ms / 1e9, "gbps": problem.kv_bytes() / ms / 1e6}
    if watts:
        entry["power_w"] = watts
        bench_report.add_efficiency(entry)
    return entry


def made_up_report():
    problems = bench.build_problems((64, 128), ("f16",), (False, True), (512, 2048, 8192), True)
    rows = []
    for index, problem in enumerate(problems):
        ours = 0.1 + 0.01 * index
        results = {"ours": result(ours, problem, 500.0),
                   "flash": result(ours * 1.2, problem, 520.0),
                   "cudnn": {"error": "No available kernel"} if index == 3 else
                            result(ours * 0.95, problem, 510.0)}
        rows.append({**problem._asdict(), "flops": problem.flops(), "kv_bytes": problem.kv_bytes(),
                     "check": "ok", "check_relative_diff": 1e-3, "results": results,
                     **{f"ratio_{name}": 1.0 for name in bench.PEERS}})
    meta = {"gpu": "Made-up GPU", "compute_capability": "9.0", "sms": 132, "torch": "2.x",
            "cuda": "13.0", "cudnn": 91900, "triton": "3.x", "flashcore": "0.1.0",
            "nvidia_smi_start": {"driver": "580"}, "nvidia_smi_end": {"driver": "580"},
            "power_source": "stand-in", "power_error": None}
    return {"meta": meta, "ceilings": {"matmul_f16_tflops": 750.0, "copy_gbps": 3000.0},
            "rows": rows}


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, path
    return struct.unpack(">II", data[16:24])


def test_report_writes_json_plots_and_markdown(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    report = made_up_report()
    lines = bench.table_lines(report["rows"], report["ceilings"])
    written = bench_report.write_report(report, tmp_path / "out", lines)
    names = sorted(path.name for path in written)
    assert names == ["bench.json", "decode_f16.png", "report.md", "tflops_f16.png",
                     "tflops_per_watt_f16.png"]
    for path in written:
        if path.suffix == ".png":
            width, height = png_size(path)
            assert width > 300 and height > 200
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "![tflops_f16](tflops_f16.png)" in markdown and lines[0] in markdown
    assert "Made-up GPU" in markdown


def test_plots_again_from_a_saved_json(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    import json

    saved = tmp_path / "bench.json"
    report = made_up_report()
    for row in report["rows"]:   # no power read: no per-watt plot
        for entry in row["results"].values():
            for key in ("power_w", "tflops_per_watt", "gbps_per_watt"):
                entry.pop(key, None)
    saved.write_text(json.dumps(report))
    assert bench_report.main([str(saved), str(tmp_path / "plots")]) == 0
    assert sorted(path.name for path in (tmp_path / "plots").iterdir()) == [
        "decode_f16.png", "tflops_f16.png"]


class StandInNvml:
    instant = True   # instantaneous power readings: no 2 s window for an averaged one

    def __init__(self):
        self.reads = 0

    def read(self):
        self.reads += 1
        return 400.0 + self.reads, 1980, 2619, 55


def test_power_while_running_summarizes_samples():
    nvml = StandInNvml()
    calls = []
    summary = bench_report.power_while_running(lambda: calls.append(1), nvml, 0.1, 1.0,
                                               synchronize=lambda: None)
    assert calls and summary["power_samples"] >= 2
    assert 400 < summary["power_w"] <= summary["power_w_max"]
    assert summary["sm_clock_mhz"] == 1980 and summary["temperature_c_max"] == 55
    assert bench_report.summarize([], 1.0) == {"power_error": "no NVML sample in the window"}


def test_nvml_without_a_driver_says_why():
    nvml = bench_report.Nvml(0)
    if nvml.error is None:
        pytest.skip(f"this machine has NVML ({nvml.source})")
    assert "NVML" in nvml.error


def test_nvml_through_pynvml(monkeypatch):
    """The pynvml path with a stand-in module: UUID first, milliwatts to watts, clock kinds."""
    import types

    calls = []
    fake = types.ModuleType("pynvml")
    fake.__version__ = "0.0"
    fake.NVMLError = type("NVMLError", (Exception,), {})
    fake.nvmlInit = lambda: calls.append("init")
    fake.nvmlDeviceGetHandleByUUID = lambda uuid: ("handle", uuid)
    fake.nvmlDeviceGetHandleByIndex = lambda index: ("index", index)
    fake.nvmlDeviceGetPowerUsage = lambda handle: 612_345
    fake.nvmlDeviceGetClockInfo = lambda handle, kind: {bench_report.NVML_CLOCK_SM: 1755,
                                                         bench_report.NVML_CLOCK_MEM: 2619}[kind]
    fake.nvmlDeviceGetTemperature = lambda handle, sensor: 61
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    nvml = bench_report.Nvml(0, "GPU-1234")   # no instantaneous field: the 1 s average
    assert nvml.error is None and calls == ["init"] and not nvml.instant
    assert nvml.source == "pynvml 0.0, power averaged over 1 s"
    assert nvml.read() == (612.345, 1755, 2619, 61)

    field = types.SimpleNamespace(nvmlReturn=0, value=types.SimpleNamespace(uiVal=455_000))
    fake.nvmlDeviceGetFieldValues = lambda handle, ids: (
        [field] if ids == [bench_report.NVML_FI_DEV_POWER_INSTANT] else None)
    nvml = bench_report.Nvml(0, "GPU-1234")
    assert nvml.instant and nvml.source == "pynvml 0.0, instantaneous power"
    assert nvml.read() == (455.0, 1755, 2619, 61)


def test_sweep_bars_state_issue_16s_figures():
    def row(dtype, keys, fa3, cudnn, label="sweep"):
        return {"label": label, "dtype": dtype, "seqlen_k": keys, "ratio_fa3": fa3, "ratio_cudnn": cudnn}

    rows = [row("bf16", 512, 2.0, 0.9), row("bf16", 4096, 0.5, 1.0), row("f16", 4096, 0.95, 0.95),
            row("bf16", 1, 0.1, 0.1, label="decode")]
    lines = bench.sweep_bars(rows)
    assert lines[0] == "sweep, bf16 rows against FA3: 1.0000x (2 rows); from 2048 keys 0.5000x (1 rows)"
    assert lines[1].startswith("sweep, all rows against cuDNN: 0.9491x (3 rows)")
    assert lines[2] == "sweep rows below 0.92x of the best peer (FA3, cuDNN): 2 of 3"
    assert bench.sweep_bars([row("bf16", 1, 0.1, 0.1, label="decode")]) == []
