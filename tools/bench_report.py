"""tools/bench.py's report: the rows as JSON, PNG plots, and GPU power, clocks and temperature
read through NVML while each implementation runs.

    python3 tools/bench.py --report DIR              # measure, then write DIR (below)
    python3 tools/bench_report.py BENCH_JSON DIR     # the plots again from a saved bench.json

DIR gets bench.json (what `bench.py --json` writes, with power per result when NVML answered),
report.md (header, table, plots), and per dtype: tflops_<dtype>.png (TFLOP/s against sequence
length, one panel per head_dim and causality, one line per implementation), tflops_per_watt_<dtype>.png
(when power was read) and decode_<dtype>.png (decode GB/s of K+V against the copy ceiling).

NVML comes from the nvidia-ml-py package (`import pynvml`) when it imports, else from
libnvidia-ml.so.1 through ctypes. Plotting needs matplotlib; nothing here needs a GPU.
"""
import ctypes
import json
import statistics
import sys
import threading
import time
from pathlib import Path

NVML_SUCCESS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0
NVML_FI_DEV_POWER_INSTANT = 186   # nvmlDeviceGetFieldValues: power now, not a 1 s average
SAMPLE_INTERVAL_S = 0.01
AVERAGED_WINDOW_S = 2.0   # NVML's averaged power covers 1 s: the second half of 2 s is this work alone
IMPLEMENTATION_STYLES = {   # name: (label, matplotlib format)
    "ours": ("FlashCore", "o-"),
    "untuned": ("FlashCore, heuristic (FC_TUNED=0)", "o--"),
    "baseline": ("FlashCore, baseline build", "o:"),
    "flash": ("SDPA flash (FlashAttention-2)", "s-"),
    "cudnn": ("SDPA cuDNN", "^-"),
    "fa3": ("FlashAttention-3 (fa3-fwd; f16 rows on bf16 copies)", "d-"),
}


class Nvml:
    """One GPU's power (W), SM and memory clocks (MHz) and temperature (C) through NVML.

    Opened for a device's UUID (what torch reports: the same GPU whatever CUDA_VISIBLE_DEVICES
    says), else its index. .error says why it could not be opened (then read() is never called).
    """

    def __init__(self, index=0, uuid=None):
        self.error = None
        self.source = None
        self.instant = False   # power read instantaneously (else NVML's 1 s average)
        try:
            self._open_pynvml(index, uuid)
        except ImportError:
            try:
                self._open_ctypes(index, uuid)
            except OSError as error:
                self.error = f"no NVML: nvidia-ml-py is not installed and {error}"
        except Exception as error:   # pynvml.NVMLError and friends
            self.error = f"NVML through pynvml: {error}"

    def _open_pynvml(self, index, uuid):
        import pynvml

        pynvml.nvmlInit()
        handle = None
        if uuid:
            try:
                handle = pynvml.nvmlDeviceGetHandleByUUID(uuid)
            except Exception:   # an NVMLError, or an old pynvml that wants bytes
                handle = None
        if handle is None:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)

        def instant_power():
            value = pynvml.nvmlDeviceGetFieldValues(handle, [NVML_FI_DEV_POWER_INSTANT])[0]
            if value.nvmlReturn != NVML_SUCCESS:
                raise OSError(f"NVML field {NVML_FI_DEV_POWER_INSTANT}: status {value.nvmlReturn}")
            return value.value.uiVal

        # NOTE: on Ampere and later, nvmlDeviceGetPowerUsage is an average over the last second,
        # which blurs results timed for less than that into their neighbours; the instantaneous
        # field (drivers from 530 on) is read where the driver has it.
        power = pynvml.nvmlDeviceGetPowerUsage
        try:
            instant_power()
            power, self.instant = (lambda _: instant_power()), True
        except Exception:   # no such field here: the averaged reading
            pass
        self._read_raw = lambda: (
            power(handle),
            pynvml.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_SM),
            pynvml.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_MEM),
            pynvml.nvmlDeviceGetTemperature(handle, NVML_TEMPERATURE_GPU))
        self.source = (f"pynvml {getattr(pynvml, '__version__', '')}".strip()
                       + (", instantaneous power" if self.instant else ", power averaged over 1 s"))

    def _open_ctypes(self, index, uuid):
        lib = ctypes.CDLL("libnvidia-ml.so.1")
        handle = ctypes.c_void_p()

        def call(name, *args):
            status = getattr(lib, name)(*args)
            if status != NVML_SUCCESS:
                raise OSError(f"{name} returned NVML status {status}")

        call("nvmlInit_v2")
        try:
            if not uuid:
                raise OSError("no UUID")
            call("nvmlDeviceGetHandleByUUID", uuid.encode(), ctypes.byref(handle))
        except OSError:
            call("nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(index), ctypes.byref(handle))
        value = ctypes.c_uint()

        def read(name, *args):
            call(name, handle, *args, ctypes.byref(value))
            return value.value

        self._read_raw = lambda: (
            read("nvmlDeviceGetPowerUsage"),
            read("nvmlDeviceGetClockInfo", ctypes.c_int(NVML_CLOCK_SM)),
            read("nvmlDeviceGetClockInfo", ctypes.c_int(NVML_CLOCK_MEM)),
            read("nvmlDeviceGetTemperature", ctypes.c_int(NVML_TEMPERATURE_GPU)))
        self.source = "libnvidia-ml.so.1 (ctypes), power averaged over 1 s"

    def read(self):
        """(power W, SM clock MHz, memory clock MHz, temperature C) now."""
        milliwatts, sm_clock, mem_clock, temperature = self._read_raw()
        return milliwatts / 1000.0, sm_clock, mem_clock, temperature


class Sampler:
    """Reads an Nvml every SAMPLE_INTERVAL_S on a thread while in a `with` block."""

    def __init__(self, nvml):
        self.nvml = nvml
        self.samples = []   # (seconds since the start, power, sm clock, mem clock, temperature)
        self._stop = threading.Event()
        self._thread = None
        self._start = None

    def _run(self):
        while not self._stop.is_set():
            try:
                self.samples.append((time.perf_counter() - self._start, *self.nvml.read()))
            except Exception:   # one failed read must not end the benchmark
                pass
            self._stop.wait(SAMPLE_INTERVAL_S)

    def __enter__(self):
        self.samples, self._start = [], time.perf_counter()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()


def summarize(samples, duration, instant=False):
    """Power, clocks and temperature of a window from its samples.

    NOTE: NVML's plain power reading is an average over the last second on recent GPUs (Ampere
    and later), so then the power is the median of the window's second half only (which a window
    of 2 s or more fills with readings of this work alone); instantaneous readings count from the
    first tenth on. Clocks and temperature come from all.
    """
    if not samples:
        return {"power_error": "no NVML sample in the window"}
    settle = duration / 10 if instant else duration / 2
    late = [sample for sample in samples if sample[0] >= settle] or samples
    return {
        "power_w": statistics.median(sample[1] for sample in late),
        "power_w_max": max(sample[1] for sample in samples),
        "sm_clock_mhz": statistics.median(sample[2] for sample in samples),
        "sm_clock_mhz_min": min(sample[2] for sample in samples),
        "mem_clock_mhz": statistics.median(sample[3] for sample in samples),
        "temperature_c_max": max(sample[4] for sample in samples),
        "power_samples": len(samples),
        "power_window_s": round(duration, 3),
    }


def power_while_running(fn, nvml, seconds, launch_ms, synchronize):
    """Runs fn back to back for about `seconds` while sampling NVML: summarize()'s dict.

    Launches in groups of about 10 ms of GPU work, synchronizing between groups so that the
    window is the GPU's time, not a queue filled ahead of it. With averaged power readings the
    window is at least AVERAGED_WINDOW_S, so that its second half reads this work alone.
    """
    group = max(1, int(10.0 / max(launch_ms, 1e-3)))
    if not getattr(nvml, "instant", False):
        seconds = max(seconds, AVERAGED_WINDOW_S)
    synchronize()
    with Sampler(nvml) as sampler:
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            for _ in range(group):
                fn()
            synchronize()
        duration = time.perf_counter() - start
    return summarize(sampler.samples, duration, getattr(nvml, "instant", False))


def add_efficiency(entry):
    """TFLOP/s per watt and GB/s per watt of a result entry that has both a rate and a power."""
    if entry.get("power_w") and "tflops" in entry:
        entry["tflops_per_watt"] = entry["tflops"] / entry["power_w"]
        entry["gbps_per_watt"] = entry["gbps"] / entry["power_w"]


# ---- plots ----

def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _implementations(rows):
    names = []
    for row in rows:
        for name in row["results"]:
            if name not in names:
                names.append(name)
    return names


def _style(name):
    return IMPLEMENTATION_STYLES.get(name, (name, "x-"))


def _sweep_figure(plt, rows, dtype, metric, ylabel, title):
    """One panel per (head_dim, causal), sequence length on x (log 2), one line per implementation."""
    sweep = [row for row in rows if row["label"] == "sweep" and row["dtype"] == dtype]
    if not sweep:
        return None
    head_dims = sorted({row["head_dim"] for row in sweep})
    causal_modes = sorted({row["causal"] for row in sweep})
    figure, axes = plt.subplots(len(head_dims), len(causal_modes), squeeze=False,
                                figsize=(5.5 * len(causal_modes), 3.6 * len(head_dims)))
    plotted = False
    for i, head_dim in enumerate(head_dims):
        for j, causal in enumerate(causal_modes):
            axis = axes[i][j]
            panel = sorted((row for row in sweep if row["head_dim"] == head_dim
                            and row["causal"] == causal), key=lambda row: row["seqlen_q"])
            for name in _implementations(panel):
                points = [(row["seqlen_q"], row["results"][name].get(metric)) for row in panel
                          if row["results"].get(name, {}).get(metric) is not None]
                if points:
                    label, style = _style(name)
                    axis.plot(*zip(*points), style, label=label, markersize=4)
                    plotted = True
            axis.set_xscale("log", base=2)
            axis.set_title(f"head_dim {head_dim}, {'causal' if causal else 'not causal'}",
                           fontsize=10)
            axis.set_xlabel("sequence length (batch x length = 16k tokens)")
            axis.set_ylabel(ylabel)
            axis.set_ylim(bottom=0)
            axis.grid(True, alpha=0.3)
            if panel:
                axis.set_xticks([row["seqlen_q"] for row in panel])
                axis.set_xticklabels([f"{row['seqlen_q'] // 1024}k" if row["seqlen_q"] >= 1024
                                      else str(row["seqlen_q"]) for row in panel])
    if not plotted:
        plt.close(figure)
        return None
    axes[0][0].legend(fontsize=8)
    figure.suptitle(title)
    figure.tight_layout()
    return figure


def _decode_figure(plt, rows, dtype, ceilings, title):
    """Grouped bars: GB/s of K+V per decode row and implementation, the copy ceiling as a line."""
    decode = [row for row in rows if row.get("memory_bound") and row["dtype"] == dtype]
    if not decode:
        return None
    names = _implementations(decode)
    figure, axis = plt.subplots(figsize=(4.5 + 2.2 * len(decode), 4))
    width = 0.8 / max(1, len(names))
    for n, name in enumerate(names):
        xs, ys = [], []
        for index, row in enumerate(decode):
            gbps = row["results"].get(name, {}).get("gbps")
            if gbps is not None:
                xs.append(index + n * width - 0.4 + width / 2)
                ys.append(gbps)
        axis.bar(xs, ys, width, label=_style(name)[0])
    copy = (ceilings or {}).get("copy_gbps")
    if copy:
        axis.axhline(copy, color="black", linestyle="--", linewidth=1,
                     label=f"device copy {copy:.0f} GB/s (read + write)")
    axis.set_xticks(range(len(decode)))
    axis.set_xticklabels([f"B{row['batch']} Hq{row['heads_q']}/{row['heads_kv']}\n"
                          f"Sq{row['seqlen_q']} Sk{row['seqlen_k']} D{row['head_dim']}"
                          for row in decode], fontsize=8)
    axis.set_ylabel("GB/s of K and V read")
    axis.set_ylim(bottom=0)
    axis.grid(True, axis="y", alpha=0.3)
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axis.set_title(title)
    figure.tight_layout()
    return figure


def write_plots(report, directory):
    """The PNGs of a bench.json dict into directory; returns their paths."""
    plt = _pyplot()
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    rows, meta, ceilings = report["rows"], report.get("meta", {}), report.get("ceilings", {})
    gpu = meta.get("gpu", "GPU")
    written = []
    for dtype in sorted({row["dtype"] for row in rows}):
        figures = {
            f"tflops_{dtype}.png": _sweep_figure(
                plt, rows, dtype, "tflops", "TFLOP/s", f"{gpu}: attention forward, {dtype}"),
            f"tflops_per_watt_{dtype}.png": _sweep_figure(
                plt, rows, dtype, "tflops_per_watt", "TFLOP/s per W",
                f"{gpu}: TFLOP/s per watt (NVML power while each ran), {dtype}"),
            f"decode_{dtype}.png": _decode_figure(
                plt, rows, dtype, ceilings, f"{gpu}: decode, {dtype}"),
        }
        for name, figure in figures.items():
            if figure is not None:
                figure.savefig(directory / name, dpi=110)
                plt.close(figure)
                written.append(directory / name)
    return written


def write_markdown(report, directory, table_lines, pictures):
    """report.md: the header, the plots and the table."""
    meta, ceilings = report.get("meta", {}), report.get("ceilings", {})
    lines = [f"# Benchmark: {meta.get('gpu', '?')}", ""]
    smi = meta.get("nvidia_smi_end") or meta.get("nvidia_smi_start") or {}
    lines.append(f"sm_{str(meta.get('compute_capability', '?')).replace('.', '')}, "
                 f"{meta.get('sms', '?')} SMs, driver {smi.get('driver', '?')}; torch "
                 f"{meta.get('torch', '?')}, CUDA {meta.get('cuda', '?')}, cuDNN "
                 f"{meta.get('cudnn', '?')}, triton {meta.get('triton', '?')}, FlashCore "
                 f"{meta.get('flashcore', '?')}; power from {meta.get('power_source') or 'nowhere'}"
                 f"{': ' + meta['power_error'] if meta.get('power_error') else ''}.")
    if ceilings:
        lines.append(f"Ceilings: fp16 matmul {ceilings.get('matmul_f16_tflops', 0):.0f} TFLOP/s, "
                     f"copy {ceilings.get('copy_gbps', 0):.0f} GB/s (read + write).")
    lines.append("")
    for picture in pictures:
        lines += [f"![{picture.stem}]({picture.name})", ""]
    lines += ["Ratios are peer time / our time (above 1: FlashCore is faster).", "", "```"]
    lines += table_lines
    lines += ["```", ""]
    path = Path(directory) / "report.md"
    path.write_text("\n".join(lines))
    return path


def write_report(report, directory, table_lines=None):
    """bench.json, the PNGs and report.md into directory; returns the paths written."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    json_path = directory / "bench.json"
    json_path.write_text(json.dumps(report, indent=1) + "\n")
    written = [json_path]
    try:
        pictures = write_plots(report, directory)
    except ImportError as error:
        print(f"bench_report: no plots: {error} (pip install matplotlib)", file=sys.stderr)
        pictures = []
    written += pictures
    written.append(write_markdown(report, directory, table_lines or [], pictures))
    return written


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    report = json.loads(Path(argv[0]).read_text())
    for path in write_plots(report, argv[1]):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
