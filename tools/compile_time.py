#!/usr/bin/env python3
"""How long NVRTC takes on FlashCore's kernel sources, with the library's options and variations.

    FC_DUMP_SOURCE=DIR fcjit --db X precompile --spec SPEC    # the sources, DIR/<variant>.cu
    python3 tools/compile_time.py [--sets base,mid] [--repeats 3] DIR/*.cu

Each source is compiled as the library compiles it (src/jit.c's options, the templates from
kernel_templates/ by -I instead of NVRTC's in-memory headers), once to load NVRTC, then --repeats
times per option set; the best and the median, the registers, spills and cubin size ptxas reports
are printed. NVRTC 12.9 and later keep compiled code in the driver's compute cache (~/.nv, where a
driver is installed) and return it for the same source and options: the times here pass NVRTC's
--no-cache, so that each is a whole compile, unless --nvrtc-cache. A measurement tool for PERF_NOTES (issue 16's cold-compile bar), not part of the build.
"""
import argparse
import ctypes
import os
import re
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARY_OPTIONS = ["--gpu-architecture=sm_90a", "-std=c++17", "--ptxas-options=-v", "-DFC_JIT=1"]
SETS = {
    "base": [],
    "mid": ["--Ofast-compile=mid"],
    "min": ["--Ofast-compile=min"],
    "max": ["--Ofast-compile=max"],
    "ptxas-O1": ["--ptxas-options=-O1"],
    "minimal": ["--minimal"],
}


def load_nvrtc():
    names = [os.environ.get("FC_NVRTC_LIBRARY"), "libnvrtc.so.13", "libnvrtc.so",
             "/usr/local/cuda/lib64/libnvrtc.so"]
    for name in filter(None, names):
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    sys.exit("compile_time.py: NVRTC not found (set FC_NVRTC_LIBRARY)")


def compile_once(nvrtc, path, extra, arch, cache):
    program = ctypes.c_void_p()
    with open(path, "rb") as f:
        text = f.read()
    if nvrtc.nvrtcCreateProgram(ctypes.byref(program), text, os.path.basename(path).encode(), 0, None, None):
        sys.exit(f"compile_time.py: nvrtcCreateProgram failed on {path}")
    options = [o.replace("sm_90a", arch) for o in LIBRARY_OPTIONS]
    options += ["-I" + os.path.join(ROOT, "kernel_templates")] + extra + ([] if cache else ["--no-cache"])
    array = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    start = time.perf_counter()
    status = nvrtc.nvrtcCompileProgram(program, len(options), array)
    seconds = time.perf_counter() - start
    size = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetProgramLog(program, log)
    cubin = ctypes.c_size_t()
    if status == 0:
        nvrtc.nvrtcGetCUBINSize(program, ctypes.byref(cubin))
    nvrtc.nvrtcDestroyProgram(ctypes.byref(program))
    text = log.value.decode(errors="replace")
    if status:
        sys.exit(f"compile_time.py: {os.path.basename(path)} with {extra}: NVRTC status {status}\n{text}")
    regs = re.findall(r"Used (\d+) registers", text)
    spills = re.findall(r"(\d+) bytes spill stores", text)
    return seconds, regs[-1] if regs else "?", spills[-1] if spills else "?", cubin.value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="+")
    parser.add_argument("--sets", default="base", help="comma-separated: " + ", ".join(SETS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--arch", default="sm_90a")
    parser.add_argument("--nvrtc-cache", action="store_true",
                        help="let NVRTC answer from its cache (the driver's compute cache)")
    args = parser.parse_args()
    nvrtc = load_nvrtc()
    names = args.sets.split(",")
    for name in names:
        if name not in SETS:
            parser.error(f"unknown set {name!r}")
    start = time.perf_counter()
    compile_once(nvrtc, args.sources[0], [], args.arch, args.nvrtc_cache)
    print(f"first compile (NVRTC loading): {(time.perf_counter() - start) * 1e3:.0f} ms", flush=True)
    for path in args.sources:
        for name in names:
            runs = [compile_once(nvrtc, path, SETS[name], args.arch, args.nvrtc_cache) for _ in range(args.repeats)]
            times = sorted(r[0] * 1e3 for r in runs)
            _, regs, spills, cubin = runs[-1]
            print(f"{os.path.basename(path)[:-3]:52s} {name:9s} best {times[0]:6.0f} ms  median "
                  f"{times[len(times) // 2]:6.0f} ms  {regs} regs  {spills} B spilled  cubin {cubin} B",
                  flush=True)


if __name__ == "__main__":
    main()
