#!/usr/bin/env python3
"""The key-tile loops of compiled kernels, read offline (no GPU): each kernel's SASS length, its loops'
instructions, GMMAs and warpgroup arrives, its registers and spills, and ptxas's warnings that it
serialized the WGMMAs, for a kernel-template folder or two.

    python3 tools/sass_loops.py --spec SPEC.yaml [--templates DIR] [--against DIR]
                                [--fcjit build/tools/fcjit] [--keep DIR] [--min-gmma 4]

Every kernel of the spec (`fcjit precompile`'s format, tuning_db/precompile.yaml) is compiled to PTX
by fcjit (FC_DUMP_PTX; a private scratch cache, so nothing is shared with the user's), assembled by
`ptxas -O3 -v` for the arch its name ends in and disassembled by `cuobjdump -sass`. A loop is a
backward branch; those holding --min-gmma GMMAs or more are listed, innermost first (the key-tile loops:
the unmasked one is usually the shortest). --templates compiles another folder than the library's own
(FC_TEMPLATE_DIR); with --against DIR the same kernels from DIR are listed beside them, and each pair
says whether the two listings are the same instruction for instruction. ptxas's C7510-C7515 warnings
(WGMMAs serialized: a loss of most of the kernel's speed) are counted; C7519 (a warpgroup arrive
injected) is informational. cuobjdump is found on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin, or in
pip's nvidia-cuda-cuobjdump (`pip install nvidia-cuda-cuobjdump`). A reading aid for PERF_NOTES (the
offline SASS its sessions quote), not part of the build.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

# One SASS line of `cuobjdump -sass`: /*ADDR*/  INSTRUCTION ;  /* ENCODING */
SASS_LINE = re.compile(r"^\s+/\*([0-9a-f]{4,8})\*/\s+(.*?)\s*;")
BRANCH = re.compile(r"\bBRA\b.*?\b(0x[0-9a-f]+)\b")


def parse_sass(text):
    """[(address, instruction)] of one kernel's listing, in order."""
    out = []
    for line in text.splitlines():
        m = SASS_LINE.match(line)
        if m:
            out.append((int(m.group(1), 16), m.group(2)))
    return out


def loops(instructions, min_gmma=4):
    """The backward branches' bodies holding min_gmma GMMAs or more, shortest first: dicts of start and
    end address, instructions, GMMAs and WARPGROUP.ARRIVEs."""
    index = {address: i for i, (address, _) in enumerate(instructions)}
    found = []
    for i, (address, text) in enumerate(instructions):
        m = BRANCH.search(text)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target >= address or target not in index:
            continue
        body = [t for _, t in instructions[index[target]:i + 1]]
        gmma = sum("GMMA" in t for t in body)
        if gmma >= min_gmma:
            found.append({"start": target, "end": address, "instructions": len(body), "gmma": gmma,
                          "arrives": sum(t.startswith("WARPGROUP.ARRIVE") for t in body)})
    return sorted(found, key=lambda loop: loop["instructions"])


def ptxas_report(text):
    """Registers, spilled bytes (stores), serialization warnings (C7510-C7515) and injected arrives
    (C7519) of `ptxas -v`'s output for one kernel."""
    registers = re.search(r"Used (\d+) registers", text)
    spills = [int(x) for x in re.findall(r"(\d+) bytes spill stores", text)]
    return {"registers": int(registers.group(1)) if registers else None,
            "spill_bytes": max(spills) if spills else 0,
            "serialized": len(re.findall(r"\(C751[0-5]\)", text)),
            "injected_arrives": len(re.findall(r"\(C7519\)", text))}


def cuda_tool(name):
    """The path of a CUDA command-line tool, or None."""
    candidates = [shutil.which(name)]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates.append(os.path.join(home, "bin", name))
    for site in sys.path:   # pip's nvidia-cuda-cuobjdump / nvidia-cuda-nvcc wheels
        candidates += glob.glob(os.path.join(site, "nvidia", "*", "bin", name))
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def compile_folder(fcjit, spec, templates, work, min_gmma=4):
    """{kernel name: report} for the spec's kernels compiled from `templates` (None: the library's own)."""
    ptx = os.path.join(work, "ptx")
    os.makedirs(ptx, mode=0o700)
    env = dict(os.environ, FC_DUMP_PTX=ptx, FC_TUNING_DB=os.path.join(work, "scratch.db"))
    env.pop("FC_TEMPLATE_DIR", None)
    if templates:
        env["FC_TEMPLATE_DIR"] = templates
    done = subprocess.run([fcjit, "precompile", "--spec", spec], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"sass_loops: fcjit precompile failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    ptxas, cuobjdump = cuda_tool("ptxas"), cuda_tool("cuobjdump")
    if not ptxas or not cuobjdump:
        sys.exit("sass_loops: needs ptxas and cuobjdump (CUDA's bin folder, or `pip install nvidia-cuda-cuobjdump`)")
    reports = {}
    for path in sorted(glob.glob(os.path.join(ptx, "*.ptx"))):
        name = os.path.basename(path)[:-4]
        arch = re.search(r"_(sm_\d+a?)$", name)
        cubin = path[:-4] + ".cubin"
        assembled = subprocess.run([ptxas, "-arch=" + (arch.group(1) if arch else "sm_90a"), "-O3", "-v", path,
                                    "-o", cubin], capture_output=True, text=True)
        report = ptxas_report(assembled.stdout + assembled.stderr)
        if assembled.returncode != 0:
            report["error"] = (assembled.stdout + assembled.stderr).strip()
        else:
            listing = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True, check=True).stdout
            with open(path[:-4] + ".sass", "w") as handle:   # beside the PTX and cubin (kept with --keep)
                handle.write(listing)
            sass = parse_sass(listing)
            report.update(sass=[text for _, text in sass], loops=loops(sass, min_gmma))
        reports[name] = report
    return reports


def describe(report):
    if "error" in report:
        return "ptxas failed: " + report["error"].splitlines()[-1]
    words = [f"{len(report['sass'])} instructions", f"{report['registers']} registers",
             f"{report['spill_bytes']} B spilled"]
    if report["serialized"]:
        words.append(f"WGMMAs SERIALIZED ({report['serialized']} warnings)")
    if report["injected_arrives"]:
        words.append(f"{report['injected_arrives']} arrives injected")
    loop_words = [f"{l['instructions']} ({l['gmma']} GMMA, {l['arrives']} arrive)" for l in report["loops"][:4]]
    return ", ".join(words) + "; loops: " + (", ".join(loop_words) or "none")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", required=True, help="the kernels, in fcjit precompile's spec format")
    parser.add_argument("--templates", metavar="DIR", help="kernel templates to compile (default: the library's own)")
    parser.add_argument("--against", metavar="DIR", help="also these templates, each kernel beside the first")
    parser.add_argument("--fcjit", default="build/tools/fcjit", help="the fcjit binary (default build/tools/fcjit)")
    parser.add_argument("--keep", metavar="DIR", help="keep the PTX, cubins and listings here (else a temporary folder)")
    parser.add_argument("--min-gmma", type=int, default=4, help="a loop's GMMAs to be listed (default 4: an FP8 head_dim 64 tile has 6)")
    return parser.parse_args(argv)


def main():
    args = parse_args()
    if not os.access(args.fcjit, os.X_OK):
        sys.exit(f"sass_loops: no fcjit at {args.fcjit} (build it: meson setup build && ninja -C build; or --fcjit PATH)")
    root = args.keep or tempfile.mkdtemp(prefix="sass_loops_")
    os.makedirs(root, mode=0o700, exist_ok=True)
    first = compile_folder(args.fcjit, args.spec, args.templates, tempfile.mkdtemp(dir=root), args.min_gmma)
    second = (compile_folder(args.fcjit, args.spec, args.against, tempfile.mkdtemp(dir=root), args.min_gmma)
              if args.against else {})
    for name, report in first.items():
        print(name)
        print("  " + ("A: " if args.against else "") + describe(report))
        if name in second:
            other = second[name]
            print("  B: " + describe(other))
            if "sass" in report and "sass" in other:
                print("  A and B: " + ("the same SASS" if report["sass"] == other["sass"] else "different SASS"))
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
