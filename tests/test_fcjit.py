#!/usr/bin/env python3
"""The fcjit command line as scripts see it: exit codes, messages, JSON, and the cache it fills.

Usage: test_fcjit.py PATH/TO/fcjit. Runs without a GPU (GPU-only commands must say so with exit
code 3); compile steps skip with a reason when NVRTC is missing. Prints "N passed, N failed".
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

EXIT_OK, EXIT_FAILED_CHECK, EXIT_USAGE, EXIT_NO_ENVIRONMENT = 0, 1, 2, 3

SMALL_SPEC = """version: 1
variants:
  - kernel: reference
    arch: sm_80
    dtype: f16
    head_dim: [64, 128]
    causal: false
"""

BAD_SPEC = """version: 1
variants:
  - kernel: reference
    arch: sm_80
    dtype: f16
    head_dim: [64, sixty-four]
    causal: false
"""


class Cli:
    def __init__(self, fcjit, directory):
        self.fcjit = fcjit
        self.db = os.path.join(directory, "tuning.db")
        self.env = dict(os.environ, FC_TUNING_DB=self.db)
        self.env.pop("FC_FORCE_VARIANT", None)

    def run(self, *args, env=None):
        done = subprocess.run([self.fcjit, *args], capture_output=True, text=True, timeout=600,
                              env=env or self.env)
        return done.returncode, done.stdout, done.stderr


def nvrtc_available(cli):
    code, out, _ = cli.run("--json", "info")
    return code == EXIT_OK and json.loads(out)["nvrtc"] != ""


def test_help_and_version(cli):
    code, out, _ = cli.run("--help")
    assert code == EXIT_OK and "precompile" in out and "exit codes" in out, out
    for command in ("info", "precompile", "run", "plan", "cache"):
        code, out, _ = cli.run(command, "--help")
        assert code == EXIT_OK and "usage: fcjit" in out, (command, code, out)
    code, out, _ = cli.run("--version")
    assert code == EXIT_OK and out.startswith("fcjit "), out


def test_usage_errors_exit_2(cli):
    for args in (["bogus"], [], ["run", "--head-dim", "x"], ["precompile", "--arch", "sm_1"],
                 ["precompile", "--jobs", "0"], ["cache", "frobnicate"], ["run", "--dtype", "fp7"]):
        code, _, err = cli.run(*args)
        assert code == EXIT_USAGE, (args, code, err)
        assert err.strip(), (args, "no message on stderr")


def test_info_without_gpu_is_plain(cli):
    code, out, _ = cli.run("--json", "info")
    info = json.loads(out)
    assert code == EXIT_OK, code
    assert info["cache"] == cli.db, info
    if info["gpu_count"] == 0:
        assert info["driver_missing"] or info["driver"], info


def test_plan_names_kernel_and_reason(cli):
    code, out, _ = cli.run("--json", "plan", "--head-dim", "128", "--causal")
    plan = json.loads(out)
    assert code == EXIT_OK and plan["kernel"].startswith("sm90_f16_d128_causal"), plan
    code, _, err = cli.run("plan", "--head-dim", "100")
    assert code != EXIT_OK and "head_dim 100" in err, (code, err)
    code, _, err = cli.run("plan", "--heads-q", "8", "--heads-kv", "3")
    assert code == EXIT_USAGE and "multiple of heads_kv" in err, (code, err)


def test_run_without_gpu_says_so(cli):
    code, out, err = cli.run("--json", "info")
    if json.loads(out)["gpu_count"] > 0:
        return "skipped: a GPU is present"
    code, _, err = cli.run("run", "--seqlen", "64")
    assert code == EXIT_NO_ENVIRONMENT and "driver" in err.lower(), (code, err)


def test_bad_spec_names_line_and_column(cli, directory):
    path = os.path.join(directory, "bad.yaml")
    with open(path, "w") as handle:
        handle.write(BAD_SPEC)
    code, _, err = cli.run("precompile", "--spec", path)
    assert code == EXIT_USAGE and f"{path}:6:" in err, (code, err)
    code, _, err = cli.run("precompile", "--spec", os.path.join(directory, "missing.yaml"))
    assert code == EXIT_USAGE and "missing.yaml" in err, (code, err)
    sm90_only = os.path.join(directory, "sm90.yaml")
    with open(sm90_only, "w") as handle:
        handle.write(SMALL_SPEC.replace("reference", "sm90").replace("sm_80", "sm_90a"))
    code, _, err = cli.run("precompile", "--spec", sm90_only, "--arch", "sm_80")
    assert code == EXIT_USAGE and "no variant" in err, (code, err)


def test_precompile_fills_then_hits_the_cache(cli, directory):
    if not nvrtc_available(cli):
        return "skipped: NVRTC is not available here"
    path = os.path.join(directory, "small.yaml")
    with open(path, "w") as handle:
        handle.write(SMALL_SPEC)
    code, out, err = cli.run("--json", "precompile", "--spec", path, "--jobs", "2")
    first = json.loads(out.strip().splitlines()[-1])
    assert code == EXIT_OK and first["compiled"] == 2 and first["failed"] == 0, (out, err)
    code, out, _ = cli.run("--json", "precompile", "--spec", path)
    second = json.loads(out.strip().splitlines()[-1])
    assert code == EXIT_OK and second["compiled"] == 0 and second["cached"] == 2, out
    code, out, _ = cli.run("--json", "cache", "ls")
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 2 and all(r["checksum_ok"] and r["spill_stores"] == 0 for r in rows), rows


def test_verify_finds_a_corrupted_cubin_and_precompile_repairs_it(cli, directory):
    if not nvrtc_available(cli):
        return "skipped: NVRTC is not available here"
    path = os.path.join(directory, "small.yaml")
    with sqlite3.connect(cli.db) as db:
        db.execute("UPDATE cubins SET cubin = zeroblob(length(cubin)) WHERE rowid = "
                   "(SELECT min(rowid) FROM cubins)")
    code, out, _ = cli.run("--json", "cache", "verify")
    assert code == EXIT_FAILED_CHECK and json.loads(out)["bad_rows"] == 1, (code, out)
    code, out, _ = cli.run("--json", "precompile", "--spec", path)
    repaired = json.loads(out.strip().splitlines()[-1])
    assert code == EXIT_OK and repaired["compiled"] == 1 and repaired["cached"] == 1, out
    code, out, _ = cli.run("--json", "cache", "verify")
    assert code == EXIT_OK and json.loads(out)["bad_rows"] == 0, out
    code, out, _ = cli.run("--json", "cache", "clear")
    assert code == EXIT_OK and json.loads(out)["deleted"] == 2, out


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return EXIT_USAGE
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="fcjit-test-") as directory:
        cli = Cli(sys.argv[1], directory)
        tests = [
            (test_help_and_version, (cli,)),
            (test_usage_errors_exit_2, (cli,)),
            (test_info_without_gpu_is_plain, (cli,)),
            (test_plan_names_kernel_and_reason, (cli,)),
            (test_run_without_gpu_says_so, (cli,)),
            (test_bad_spec_names_line_and_column, (cli, directory)),
            (test_precompile_fills_then_hits_the_cache, (cli, directory)),
            (test_verify_finds_a_corrupted_cubin_and_precompile_repairs_it, (cli, directory)),
        ]
        for test, args in tests:
            try:
                note = test(*args)
                passed += 1
                print(f"ok   {test.__name__}{': ' + note if note else ''}")
            except AssertionError as error:
                failed += 1
                print(f"FAIL {test.__name__}: {error}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
