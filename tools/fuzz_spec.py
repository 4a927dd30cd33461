#!/usr/bin/env python3
"""Spec fuzzer: mutates the shipped YAML specs (tuning_db/*.yaml) and has fcjit parse each mutant.

Every mutant goes through both commands that only parse (`fcjit tune --dry-run --spec` and
`fcjit precompile --dry-run --spec`), best under an ASan/UBSan build:

    meson setup build-asan -Db_sanitize=address,undefined && ninja -C build-asan
    tools/fuzz_spec.py --fcjit build-asan/tools/fcjit --mutants 1000

A finding is a crash (a signal), an exit code other than 0 (parsed) or 2 (refused, with a message),
a sanitizer report on stderr, or a run over --seconds-max. Findings are kept under --keep for
replaying. Prints one summary line (mutants, runs, findings, slowest case); exit 1 on findings.
"""
import argparse
import concurrent.futures
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")
EXIT_PARSED, EXIT_REFUSED = 0, 2
KILL_AFTER_S = 30   # far past --seconds-max: a hang is reported, not waited out

# Fragments a careless or hostile editor might leave in a spec.
TOKENS = [b"[", b"]", b"{", b"}", b":", b": ", b"- ", b", ", b"&a ", b"*a", b"!!int ", b"!tag ", b'"', b"'",
          b"#", b"\t", b"\\0", b"\x00", b"~", b"null", b"-1", b"0", b"65535", b"65536", b"2147483648",
          b"99999999999999999999", b"0x10", b"1e3", b".inf", b"\xff", b"\xc3\x28", b"\xef\xbb\xbf", b"version: 2",
          b"---\n", b"...\n", b"%YAML 1.1\n", b"? ", b"|\n", b">\n", b"<<: ", b"\r\n", b"kernel: sm90",
          b"arch: sm_90a", b"dtype: [f16, bf16, e4m3]", b"head_dim: [8, 256, 264]", b"causal: maybe", b"x" * 1000]


def mutate_bytes(data, rng):
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def mutate_lines(data, rng):
    lines = data.split(b"\n")
    for _ in range(rng.randint(1, 4)):
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        choice = rng.randrange(4)
        if choice == 0 and len(lines) > 1:
            del lines[i]
        elif choice == 1:
            lines.insert(i, lines[j])
        elif choice == 2:
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines[i] = b" " * rng.randint(0, 12) + lines[i].lstrip()
    return b"\n".join(lines)


def insert_tokens(data, rng):
    for _ in range(rng.randint(1, 6)):
        at = rng.randrange(len(data) + 1)
        data = data[:at] + rng.choice(TOKENS) + data[at:]
    return data


def replace_value(data, rng):
    """A value after some `key: ` becomes another scalar or a long list."""
    starts = [i + 2 for i in range(len(data) - 1) if data[i:i + 2] == b": "]
    if not starts:
        return data
    at = rng.choice(starts)
    end = data.find(b"\n", at)
    end = len(data) if end < 0 else end
    if rng.random() < 0.3:
        count = rng.choice([0, 1, 100, 5000, 20000])
        value = b"[" + b", ".join(str(rng.randint(-5, 70000)).encode() for _ in range(count)) + b"]"
    else:
        value = rng.choice(TOKENS + [str(rng.randint(-2 ** 40, 2 ** 40)).encode()])
    return data[:at] + value + data[end:]


def nest_deeply(data, rng):
    depth = rng.choice([10, 40, 1000, 100000])
    opener, closer = rng.choice([(b"[", b"]"), (b"{a: ", b"}"), (b"- ", b"")])
    at = rng.randrange(len(data) + 1)
    middle = b"1" if opener.startswith(b"{") else b""
    return data[:at] + opener * depth + middle + closer * depth + data[at:]


def repeat_block(data, rng):
    """An entry of a list repeated many times: duplicates to collapse, caps to reach."""
    lines = data.split(b"\n")
    starts = [i for i, line in enumerate(lines) if line.lstrip().startswith(b"- ")]
    if not starts:
        return data
    first = rng.choice(starts)
    last = first + 1
    while last < len(lines) and lines[last].startswith(b" ") and not lines[last].lstrip().startswith(b"- "):
        last += 1
    block = lines[first:last] * rng.choice([2, 50, 2000])
    return b"\n".join(lines[:first] + block + lines[first:])


def truncate(data, rng):
    return data[:rng.randrange(len(data) + 1)]


def splice(data, rng, seeds):
    other = rng.choice(seeds)
    return data[:rng.randrange(len(data) + 1)] + other[rng.randrange(len(other) + 1):]


MUTATORS = [mutate_bytes, mutate_lines, insert_tokens, replace_value, replace_value, nest_deeply, repeat_block,
            truncate]


def make_mutant(seeds, rng):
    data = rng.choice(seeds)
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.1:
            data = splice(data, rng, seeds)
        else:
            data = rng.choice(MUTATORS)(data, rng)
    return data


def run_one(fcjit, command, path, env, seconds_max):
    args = [fcjit, command, "--dry-run", "--spec", path]
    start = time.monotonic()
    try:
        done = subprocess.run(args, capture_output=True, timeout=KILL_AFTER_S, env=env)
        code, err = done.returncode, done.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        code, err = None, f"killed after {KILL_AFTER_S} s"
    elapsed = time.monotonic() - start
    problems = []
    if code is None or code < 0:
        problems.append(f"crash or hang ({err if code is None else 'signal %d' % -code})")
    elif code not in (EXIT_PARSED, EXIT_REFUSED):
        problems.append(f"exit {code}")
    elif code == EXIT_REFUSED and not err.strip():
        problems.append("refused without a message")
    if any(mark in err for mark in SANITIZER_MARKS):
        problems.append("sanitizer report")
    if elapsed > seconds_max:
        problems.append(f"{elapsed:.2f} s")
    return command, elapsed, problems, err, code


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fcjit", required=True, help="the fcjit to test (an ASan/UBSan build is best)")
    parser.add_argument("--mutants", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1, help="random seed: the same seed makes the same mutants")
    parser.add_argument("--seconds-max", type=float, default=2.0, help="a slower parse is a finding")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--corpus", default=os.path.join(HERE, "..", "tuning_db"), help="folder of seed *.yaml")
    parser.add_argument("--keep", default=None, help="folder to keep the mutants of findings in")
    options = parser.parse_args()

    seeds = [open(os.path.join(options.corpus, name), "rb").read()
             for name in sorted(os.listdir(options.corpus)) if name.endswith(".yaml")]
    if not seeds:
        print(f"no *.yaml under {options.corpus}", file=sys.stderr)
        return 2
    rng = random.Random(options.seed)
    fcjit = os.path.abspath(options.fcjit)
    with tempfile.TemporaryDirectory(prefix="fuzz-spec-") as work:
        env = dict(os.environ, HOME=work, FC_TUNING_DB=os.path.join(work, "tuning.db"),
                   ASAN_OPTIONS="detect_leaks=1:abort_on_error=0", UBSAN_OPTIONS="print_stacktrace=1")
        env.pop("FC_LOG", None)
        paths = []
        for i in range(options.mutants):
            path = os.path.join(work, f"mutant{i:05d}.yaml")
            with open(path, "wb") as handle:
                handle.write(make_mutant(seeds, rng))
            paths.append(path)
        runs = [(command, path) for path in paths for command in ("tune", "precompile")]
        findings, slowest, parsed = [], (0.0, "", ""), 0
        with concurrent.futures.ThreadPoolExecutor(max_workers=options.jobs) as pool:
            futures = {pool.submit(run_one, fcjit, command, path, env, options.seconds_max): path
                       for command, path in runs}
            for future in concurrent.futures.as_completed(futures):
                path = futures[future]
                command, elapsed, problems, err, code = future.result()
                parsed += code == EXIT_PARSED
                if elapsed > slowest[0]:
                    slowest = (elapsed, command, os.path.basename(path))
                if problems:
                    findings.append((path, command, problems, err))
        for path, command, problems, err in findings:
            print(f"FINDING {os.path.basename(path)} ({command}): {'; '.join(problems)}\n{err[-2000:]}")
            if options.keep:
                os.makedirs(options.keep, exist_ok=True)
                with open(path, "rb") as source, open(os.path.join(options.keep, os.path.basename(path)), "wb") as out:
                    out.write(source.read())
    print(f"{options.mutants} mutants, {len(runs)} runs ({parsed} parsed, the rest refused), {len(findings)} findings; "
          f"slowest {slowest[0]:.3f} s "
          f"({slowest[1]} --dry-run on {slowest[2]}, seed {options.seed})")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
