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
        self.fcjit = os.path.abspath(fcjit)
        self.db = os.path.join(directory, "tuning.db")
        self.env = dict(os.environ, FC_TUNING_DB=self.db)
        self.env.pop("FC_FORCE_VARIANT", None)
        self.env.pop("FC_QUICK_FIRST_CALL", None)

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
    for command in ("info", "precompile", "run", "plan", "cache", "tune", "explain", "quantize"):
        code, out, _ = cli.run(command, "--help")
        assert code == EXIT_OK and "usage: fcjit" in out, (command, code, out)
    code, out, _ = cli.run("--version")
    assert code == EXIT_OK and out.startswith("fcjit "), out


def test_usage_errors_exit_2(cli):
    for args in (["bogus"], [], ["run", "--head-dim", "x"], ["precompile", "--arch", "sm_1"],
                 ["precompile", "--jobs", "0"], ["cache", "frobnicate"], ["run", "--dtype", "fp7"],
                 ["run", "--rep-ms", "-1"], ["run", "--warmup-ms", "soon"], ["tune", "--rep-ms", "1e9"],
                 ["tune", "--warmup-ms", "nan"], ["tune", "--rounds", "-1"], ["tune", "--rounds", "21"], ["run", "--iters", "1000000"]):
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
    assert plan["splits"] == 1, plan
    decode = ["plan", "--batch", "8", "--heads-q", "32", "--heads-kv", "8", "--seqlen-q", "1", "--seqlen-k", "32768",
              "--head-dim", "128"]   # 64 row blocks of packed rows: their keys split, then combined
    code, out, _ = cli.run("--json", *decode)
    plan = json.loads(out)
    assert code == EXIT_OK and "_gqa_" in plan["kernel"] and plan["splits"] == 2, plan
    assert plan["reason"].endswith("H200))"), plan   # the whole reason, the decode kernel's inside it
    code, out, _ = cli.run(*decode)
    assert code == EXIT_OK and "splits: 2 CTAs along the keys per row block" in out, out
    code, _, err = cli.run("plan", "--head-dim", "100")
    assert code != EXIT_OK and "head_dim 100" in err, (code, err)
    code, _, err = cli.run("plan", "--heads-q", "8", "--heads-kv", "3")
    assert code == EXIT_USAGE and "multiple of heads_kv" in err, (code, err)
    code, out, _ = cli.run("--json", "plan", "--seqlen", "8192", "--causal", "--window-left", "1024")
    assert code == EXIT_OK and "_causal_win_" in json.loads(out)["kernel"], out
    code, out, _ = cli.run("--json", "plan", "--seqlen", "8192", "--window-left", "8191")   # wider: no window
    assert code == EXIT_OK and "_win_" not in json.loads(out)["kernel"], out
    code, _, err = cli.run("plan", "--causal", "--window-right", "5")
    assert code == EXIT_USAGE and "window_right 5" in err, (code, err)


def test_run_without_gpu_says_so(cli):
    code, out, err = cli.run("--json", "info")
    if json.loads(out)["gpu_count"] > 0:
        return "skipped: a GPU is present"
    code, _, err = cli.run("run", "--seqlen", "64")
    assert code == EXIT_NO_ENVIRONMENT and "driver" in err.lower(), (code, err)


def test_quantize_checks_input_before_the_gpu(cli):
    """fcjit quantize: bad input says 2 with the rule's message on any machine; good input needs a GPU."""
    for args, phrase in ((["--head-dim", "120"], "multiple of 16"),
                         (["--heads", "8", "--descale-heads", "3"], "must divide heads"),
                         (["--out-dtype", "bf16"], "only rotates"),
                         (["--out-dtype", "f16", "--rotate"], "to rotate only"),
                         (["--scaling", "sometimes"], "head, tensor or given"),
                         (["--varlen", "3,x"], "comma-separated"),
                         (["--varlen", "0,0"], "needs a sequence"),
                         (["--outliers", "0.5"], "above 1"),
                         (["--dtype", "e4m3"], "f16 or bf16")):
        code, _, err = cli.run("quantize", *args)
        assert code == EXIT_USAGE and phrase in err, (args, code, err)
    code, out, _ = cli.run("--json", "info")
    if json.loads(out)["gpu_count"] > 0:
        return "skipped (the rest): a GPU is present"
    code, _, err = cli.run("quantize", "--rotate", "--head-dim", "192", "--varlen", "5,0,7")
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


def test_shipped_precompile_set_takes_the_shipped_winners(cli):
    """`fcjit precompile` without --spec lists every variant tuning_db/winners.tsv names (for the
    --arch given), so that a first call finds its GPU model's tuned kernel cached."""
    winners_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tuning_db", "winners.tsv")
    with open(winners_path) as handle:
        winners = {line.split("\t")[5] for line in handle if line.strip() and not line.startswith("#")}
    assert winners and all(name.endswith("_sm_90a") for name in winners), sorted(winners)[:5]
    code, out, err = cli.run("--json", "precompile", "--dry-run", "--arch", "sm_90a")
    assert code == EXIT_OK, (code, err)
    listed = set(json.loads(out.strip().splitlines()[-1])["variants"])
    assert winners <= listed, sorted(winners - listed)
    code, out, err = cli.run("--json", "precompile", "--dry-run", "--arch", "sm_80")
    assert code == EXIT_OK and not winners & set(json.loads(out.strip().splitlines()[-1])["variants"]), err
    spec_only = os.path.join(os.path.dirname(winners_path), "precompile.yaml")
    code, out, err = cli.run("--json", "precompile", "--dry-run", "--arch", "sm_90a", "--spec", spec_only)
    assert code == EXIT_OK and len(json.loads(out.strip().splitlines()[-1])["variants"]) < len(listed), err


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


TUNE_SPEC = """version: 1
problems:
  - dtype: f16
    head_dim: 128
    causal: [false, true]
    seqlen: [1024, 8192]
variants:
  - kernel: sm90
    arch: sm_90a
    dtype: f16
    head_dim: 128
    causal: [false, true]
    block_m: [64, 128]
    block_n: 64
    warps: [8, 12]
"""

ROW = ("NVIDIA H100 80GB HBM3\t132\t13.0\t0123456789abcdef\tf16_d128_causal_gqa1_s2048\t"
       "sm90_f16_d128_causal_m64n64s2w8_sm_90a\t0.250000\t550.000\t1\t1\t2026-11-22T03:00:00Z\n")


def test_tune_dry_run_pairs_buckets_with_candidates(cli, directory):
    path = os.path.join(directory, "tune.yaml")
    with open(path, "w") as handle:
        handle.write(TUNE_SPEC)
    code, out, err = cli.run("--json", "tune", "--dry-run", "--spec", path)
    assert code == EXIT_OK, (code, err)
    plan = json.loads(out)
    assert plan["buckets"] == 4 and plan["plan"][0]["bucket"] == "f16_d128_gqa1_s1024", plan
    names = plan["plan"][0]["candidates"]
    assert all(not "causal" in name for name in names) and len(names) == plan["measurements"] // 4, plan
    # the spec's candidates are 64-key tiles: the heuristic's own choice (128 keys) is no candidate
    assert plan["plan"][0]["heuristic"] == "sm90_f16_d128_m128n128s2w12p_sm_90a", plan
    assert not any(b["heuristic_is_candidate"] for b in plan["plan"]), plan
    code, out, _ = cli.run("tune", "--dry-run", "--spec", path)
    assert code == EXIT_OK and "not among them" in out and "no candidate" in out.splitlines()[-1], out
    code, out, _ = cli.run("--tune", "--dry-run")   # the shipped spec, `fcjit --tune` spelling
    assert code == EXIT_OK and "144 buckets" in out and "no candidate" not in out.splitlines()[-1], out
    # every bucket of the shipped spec measures the heuristic's choice, so --margin applies in each;
    # FP8 head_dim 256 from 4k keys names it without V transposed ahead, which a winner takes anyway
    code, out, _ = cli.run("--json", "tune", "--dry-run")
    shipped = {b["bucket"]: b for b in json.loads(out)["plan"]}
    assert all(b["heuristic_is_candidate"] for b in shipped.values()), [b for b in shipped.values()
                                                                       if not b["heuristic_is_candidate"]]
    assert shipped["e4m3_d256_gqa1_s4096"]["heuristic"] == "sm90_bf16_d256_kv8_q8_m128n128s2w12p_sm_90a", shipped
    # every shipped winner of a bucket the shipped spec has is among its candidates, so a GPU's own
    # `fcjit tune` measures what the shipped layer would run (the H200's tune could not: v40.1)
    winners_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tuning_db", "winners.tsv")
    with open(winners_path) as handle:
        rows = [line.rstrip("\n").split("\t") for line in handle if not line.startswith("#")]
    outside = [(row[0], row[4], row[5]) for row in rows
               if row[4] in shipped and row[5] not in shipped[row[4]]["candidates"]]
    assert not outside and len(rows) > 200, outside
    code, out, _ = cli.run("tune", "--dry-run", "--spec", path, "--arch", "sm_80")
    assert code == EXIT_OK and out.startswith("0 buckets"), out
    with open(path, "w") as handle:
        handle.write(TUNE_SPEC.replace("seqlen: [1024, 8192]", "seqlen: [1024, long]"))
    code, _, err = cli.run("tune", "--dry-run", "--spec", path)
    assert code == EXIT_USAGE and f"{path}:6:20:" in err and "seqlen" in err, (code, err)
    with open(path, "w") as handle:
        handle.write(SMALL_SPEC)
    code, _, err = cli.run("tune", "--dry-run", "--spec", path)
    assert code == EXIT_USAGE and "problems" in err, (code, err)


FP8_TUNE_SPEC = """version: 1
problems:
  - dtype: [bf16, e4m3]
    head_dim: 128
    causal: true
    seqlen: [1024, 8192]
variants:
  - kernel: sm90
    arch: sm_90a
    dtype: bf16
    head_dim: 128
    causal: true
  - kernel: sm90
    arch: sm_90a
    dtype: [bf16, f16]
    q_fp8: true
    head_dim: 128
    causal: true
    block_n: [64, 128]
  - kernel: sm80
    arch: sm_90a
    dtype: bf16
    kv_fp8: true
    head_dim: 128
    causal: true
"""


def test_tune_dtype_picks_buckets(cli, directory):
    """--dtype e4m3: only FP8 attention's buckets, each with the q_fp8 candidates (bf16 out) and no
    other; a 16-bit bucket never gets them, nor an FP8-cache candidate (kv_fp8 alone)."""
    code, out, err = cli.run("--json", "tune", "--dry-run", "--dtype", "e4m3")   # the shipped spec
    plan = json.loads(out)
    assert code == EXIT_OK and plan["buckets"] == 36 and plan["measurements"] > 0, (code, out, err)
    assert all(b["bucket"].startswith("e4m3_") and b["candidates"] for b in plan["plan"]), plan
    assert all("_kv8_q8_" in name and name.startswith("sm90_bf16_") for b in plan["plan"] for name in b["candidates"])
    code, out, _ = cli.run("tune", "--dry-run", "--dtype", "f16,bf16")
    assert code == EXIT_OK and "108 buckets" in out and "e4m3_" not in out and "_q8_" not in out, out
    code, out, _ = cli.run("tune", "--dry-run", "--dtype", "bf16,fp8")   # fc_dtype_parse's aliases too
    assert code == EXIT_OK and out.splitlines()[-1].startswith("90 buckets"), out   # 54 bf16, 36 e4m3
    path = os.path.join(directory, "fp8-tune.yaml")
    with open(path, "w") as handle:
        handle.write(FP8_TUNE_SPEC)
    code, out, err = cli.run("--json", "tune", "--dry-run", "--spec", path)
    assert code == EXIT_OK, (code, err)
    candidates = {b["bucket"]: b["candidates"] for b in json.loads(out)["plan"]}
    assert sorted(candidates) == ["bf16_d128_causal_gqa1_s1024", "bf16_d128_causal_gqa1_s8192",
                                  "e4m3_d128_causal_gqa1_s1024", "e4m3_d128_causal_gqa1_s8192"], candidates
    assert candidates["bf16_d128_causal_gqa1_s1024"] == ["sm90_bf16_d128_causal_m128n128s2w12p_sm_90a"], candidates
    fp8_candidates = ["sm90_bf16_d128_causal_kv8_q8_m128n64s2w12p_sm_90a",
                      "sm90_bf16_d128_causal_kv8_q8_m128n128s2w12p_sm_90a"]
    assert candidates["e4m3_d128_causal_gqa1_s1024"] == fp8_candidates, candidates
    code, out, _ = cli.run("tune", "--dry-run", "--spec", path, "--dtype", "f16")
    assert code == EXIT_OK and out.startswith("0 buckets"), out
    for value in ("fp7", "", "e4m3,", ",bf16", "f16,,bf16"):
        code, out, err = cli.run("tune", "--dry-run", "--dtype", value)
        assert code == EXIT_USAGE and "--dtype" in err and not out, (value, code, out, err)
    code, _, err = cli.run("tune", "--dry-run", "--dtype")
    assert code == EXIT_USAGE and err.strip(), (code, err)


def test_tune_and_explain_without_gpu(cli):
    code, out, _ = cli.run("--json", "info")
    if json.loads(out)["gpu_count"] > 0:
        return "skipped: a GPU is present"
    code, _, err = cli.run("tune")
    assert code == EXIT_NO_ENVIRONMENT and "driver" in err.lower(), (code, err)
    code, out, err = cli.run("--json", "explain", "--head-dim", "128", "--seqlen", "4096", "--causal")
    assert code == EXIT_OK, (code, err)
    explained = json.loads(out)
    assert explained["gpu"] == "no GPU" and explained["kernel"] == explained["heuristic"], explained
    assert explained["features"].startswith("causal, no window"), explained
    code, out, err = cli.run("explain", "--seqlen", "4096", "--window-left", "256", "--window-right", "16")
    assert code == EXIT_OK and "features:  no causal mask, sliding window" in out, (code, out, err)
    code, out, err = cli.run("explain", "--seqlen", "4096", "--sinks", "20")
    assert code == EXIT_OK and "sinks 20" in out and "sinks (run time)" in out, (code, out, err)
    code, out, err = cli.run("--json", "explain", "--seqlen", "4096", "--softcap", "30", "--causal")
    assert code == EXIT_OK and "_causal_cap_" in json.loads(out)["kernel"], (code, out, err)
    assert "softcap (tanh" in json.loads(out)["features"], out


def test_cache_export_import_round_trip(cli, directory):
    path = os.path.join(directory, "rows.tsv")
    with open(path, "w") as handle:
        handle.write("# a comment\n" + ROW)
    code, out, err = cli.run("cache", "import", path)
    assert code == EXIT_OK and "imported 1" in out, (code, out, err)
    code, out, _ = cli.run("cache", "export", "--winners", "-")
    assert code == EXIT_OK and ROW in out, out
    again = os.path.join(directory, "again.tsv")
    code, _, _ = cli.run("cache", "export", again)
    assert code == EXIT_OK and ROW in open(again).read()
    with open(path, "w") as handle:   # one bad line: nothing of the file is imported
        handle.write(ROW.replace("s2048", "s4096") + "not\ta\trow\n")
    code, _, err = cli.run("cache", "import", path)
    assert code == EXIT_USAGE and f"{path}:2:" in err and "nothing imported" in err, (code, err)
    code, out, _ = cli.run("cache", "export", "-")
    assert "s4096" not in out, out
    code, _, err = cli.run("cache", "import", os.path.join(directory, "absent.tsv"))
    assert code != EXIT_OK and "absent.tsv" in err, (code, err)


# ---- issue 18: help, flags, exit codes, a cache that cannot be used, recovery, trust ----

def other_db(cli, directory, name):
    """A Cli-like environment on another cache file."""
    return dict(cli.env, FC_TUNING_DB=os.path.join(directory, name))


def cubin_rows(db):
    with sqlite3.connect(db) as handle:
        return handle.execute("SELECT count(*) FROM cubins").fetchone()[0]


def fake_kernel_row(db):
    """A cubin row written directly, as any precompile would leave one (its checksum is wrong, which
    does not matter to the commands that must not touch it)."""
    with sqlite3.connect(db) as handle:
        handle.execute("INSERT INTO cubins (key, source_key, name, arch, nvrtc_version, registers, smem_static, "
                       "smem_dynamic, spill_stores, spill_loads, stack_bytes, compile_ms, cubin, checksum) VALUES "
                       "('k', 's', 'reference_f16_d64_m16n32s1w4_sm_80', 'sm_80', '13.0', 1, 1, 1, 0, 0, 0, 1.0, "
                       "x'00', '0')")


def test_help_never_acts(cli, directory):
    env = other_db(cli, directory, "help.db")
    db = env["FC_TUNING_DB"]
    code, _, err = cli.run("cache", "ls", env=env)   # creates the file
    assert code == EXIT_OK, (code, err)
    fake_kernel_row(db)
    for args in (["cache", "clear", "--help"], ["cache", "clear", "-h"], ["cache", "ls", "--help"],
                 ["cache", "verify", "--help"], ["cache", "repair", "--help"], ["cache", "import", "--help"],
                 ["cache", "export", "--help"], ["cache", "export", "--winners", "--help"],
                 ["run", "--seqlen", "abc", "--help"], ["tune", "--spec", "/nonexistent", "--help"],
                 ["precompile", "--jobs", "0", "--help"], ["info", "--help"], ["plan", "--help"],
                 ["explain", "--help"]):
        code, out, err = subprocess_in(cli, directory, args, env)
        assert code == EXIT_OK and "usage: fcjit" in out, (args, code, out, err)
    assert cubin_rows(db) == 1, "cache clear --help deleted kernels"
    assert not os.path.exists(os.path.join(directory, "--help")), "cache export --help wrote a file"


def subprocess_in(cli, directory, args, env):
    done = subprocess.run([cli.fcjit, *args], capture_output=True, text=True, timeout=600, env=env, cwd=directory)
    return done.returncode, done.stdout, done.stderr


def test_unknown_flags_and_extra_arguments_exit_2(cli, directory):
    for args in (["info", "--bogus"], ["info", "extra"], ["cache", "ls", "extra"], ["cache", "verify", "--bogus"],
                 ["cache", "clear", "--winners"], ["cache", "clear", "now"], ["cache", "repair", "x"],
                 ["cache", "export", "a", "b"], ["cache", "export"], ["cache", "import"], ["plan", "--bogus"],
                 ["plan", "extra"], ["precompile", "extra"], ["tune", "--dry-run", "extra"], ["run", "--bogus"],
                 ["explain", "extra"], ["cache"], ["--db"], ["info", "--db"]):
        code, out, err = subprocess_in(cli, directory, args, cli.env)
        assert code == EXIT_USAGE and err.strip(), (args, code, out, err)
    code, out, _ = cli.run("info", "--json")   # global options may follow the command
    assert code == EXIT_OK and json.loads(out)["cache"] == cli.db, (code, out)


def test_clear_says_what_it_deletes(cli, directory):
    env = other_db(cli, directory, "clear.db")
    cli.run("cache", "ls", env=env)
    fake_kernel_row(env["FC_TUNING_DB"])
    code, out, _ = cli.run("cache", "clear", "--dry-run", env=env)
    assert code == EXIT_OK and "would delete 1 cached kernels" in out and env["FC_TUNING_DB"] in out, out
    assert cubin_rows(env["FC_TUNING_DB"]) == 1
    code, out, _ = cli.run("--json", "cache", "clear", env=env)
    cleared = json.loads(out)
    assert code == EXIT_OK and cleared["deleted"] == 1 and cleared["tuning_results_kept"] == 0, out
    assert cubin_rows(env["FC_TUNING_DB"]) == 0


def test_unusable_cache_never_stops_info_or_plan(cli, directory):
    garbage = os.path.join(directory, "garbage.db")
    with open(garbage, "wb") as handle:
        handle.write(bytes(range(256)) * 40)
    folder = os.path.join(directory, "folder.db")
    os.mkdir(folder)
    for path, phrase in ((garbage, "damaged"), (folder, "folder")):
        env = dict(cli.env, FC_TUNING_DB=path)
        code, out, err = cli.run("info", env=env)
        assert code == EXIT_OK and phrase in out and "fix:" in out, (path, code, out, err)
        code, out, err = cli.run("--json", "info", env=env)
        assert code == EXIT_OK and json.loads(out)["cache_state"] in ("damaged", "not-used"), (code, out)
        code, out, err = cli.run("plan", "--head-dim", "64", env=env)
        assert code == EXIT_OK and "kernel:" in out and phrase in err, (path, code, out, err)
    bare = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}   # env -i, less PATH for the loader's sake
    for args in (["info"], ["plan"]):
        code, out, err = cli.run(*args, env=bare)
        assert code == EXIT_OK, (args, code, out, err)
    code, out, _ = cli.run("info", env=bare)
    assert "no kernel cache file" in out and "HOME" in out, out
    code, _, err = cli.run("precompile", "--spec", "/dev/null", env=dict(cli.env, FC_TUNING_DB=garbage))
    assert code == EXIT_USAGE, (code, err)   # the spec is read first
    small = os.path.join(directory, "small.yaml")
    code, _, err = cli.run("precompile", "--spec", small, env=dict(cli.env, FC_TUNING_DB=garbage))
    assert code == 4 and "nothing could be stored" in err, (code, err)


def damage_a_cubin_page(db):
    """Destroys one page of the largest cubin (a page of its overflow chain); returns its key."""
    with sqlite3.connect(db) as handle:
        key, blob = handle.execute("SELECT key, cubin FROM cubins ORDER BY length(cubin) DESC").fetchone()
        page_size = handle.execute("PRAGMA page_size").fetchone()[0]
        handle.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(open(db, "rb").read())
    at = data.find(blob[len(blob) // 2:len(blob) // 2 + 64])
    assert at > 0 and len(blob) > 2 * page_size, (at, len(blob))
    page = at // page_size * page_size
    data[page:page + page_size] = b"\xff" * page_size
    open(db, "wb").write(bytes(data))
    return key


def test_damaged_cache_is_named_and_repaired(cli, directory):
    if not nvrtc_available(cli):
        return "skipped: NVRTC is not available here (real cubins span pages)"
    db = os.path.join(directory, "damaged.db")
    env = dict(cli.env, FC_TUNING_DB=db)
    code, _, err = cli.run("precompile", "--spec", os.path.join(directory, "small.yaml"), env=env)
    assert code == EXIT_OK, (code, err)
    bad_key = damage_a_cubin_page(db)
    code, out, _ = cli.run("info", env=env)
    line = [l for l in out.splitlines() if l.startswith("cache")][0]
    assert code == EXIT_OK and "DAMAGED" in line and "fcjit cache repair" in line, out
    assert "MiB" not in line, "a damaged cache's line must not read as a count"
    code, out, _ = cli.run("--json", "cache", "verify", env=env)
    verified = json.loads(out)
    assert code == EXIT_FAILED_CHECK and verified["damaged"], out
    assert [row["key"] for row in verified["bad"]] == [bad_key], verified
    code, out, _ = cli.run("cache", "repair", env=env)
    moved = [word for word in out.split() if ".damaged-" in word]
    assert code == EXIT_OK and moved and os.path.exists(moved[0]), (code, out)
    code, out, _ = cli.run("--json", "cache", "verify", env=env)
    assert code == EXIT_OK and json.loads(out)["rows"] == 0, out
    code, out, _ = cli.run("cache", "repair", env=env)
    assert code == EXIT_OK and "nothing to repair" in out, out


def test_untrusted_cache_is_not_loaded(cli, directory):
    env = other_db(cli, directory, "shared.db")
    cli.run("cache", "ls", env=env)
    os.chmod(env["FC_TUNING_DB"], 0o666)
    code, out, _ = cli.run("info", env=env)
    assert code == EXIT_OK and "writable by others" in out and "chmod go-w" in out, out
    code, out, err = cli.run("plan", env=env)
    assert code == EXIT_OK and "not loaded from" in err, (code, err)
    os.chmod(env["FC_TUNING_DB"], 0o600)
    code, out, _ = cli.run("--json", "info", env=env)
    assert json.loads(out)["cache_state"] == "ok", out


def test_new_cache_is_private(cli, directory):
    db = os.path.join(directory, "private", "sub", "tuning.db")
    code, _, err = cli.run("--db", db, "cache", "ls")
    assert code == EXIT_OK, (code, err)
    assert os.stat(db).st_mode & 0o777 == 0o600, oct(os.stat(db).st_mode)
    assert os.stat(os.path.dirname(db)).st_mode & 0o777 == 0o700


def test_one_exit_code_rule(cli, directory):
    for args in (["run", "--head-dim", "100"], ["run", "--seqlen", "64", "--heads-q", "8", "--heads-kv", "3"],
                 ["run", "--dtype", "e4m3", "--head-dim", "40"], ["plan", "--head-dim", "512"], ["explain", "--head-dim", "100"],
                 ["tune", "--spec", "/nonexistent"], ["tune", "--dry-run", "--spec", "/nonexistent"],
                 ["run", "--scale", "abc"], ["run", "--scale", "1e99"], ["plan", "--scale", "0.1x"],
                 ["run", "--seed", "abc"], ["run", "--seed", "-1"], ["plan", "--arch", "sm_1"],
                 ["plan", "--window-left", "-2"], ["explain", "--window-right", "x"], ["run", "--sinks", "x"],
                 ["plan", "--softcap", "-5"], ["explain", "--softcap", "nan"],
                 ["run", "--arch", "sm_80"]):
        code, _, err = cli.run(*args)
        assert code == EXIT_USAGE and err.strip(), (args, code, err)
    code, _, err = cli.run("plan", env=dict(cli.env, FC_FORCE_VARIANT="bogus"))
    assert code == EXIT_USAGE, (code, err)
    for family in ("reference:", "sm80:", "sm90:", "decode:"):
        assert family in err, (family, err)
    code, out, _ = cli.run("--help")
    for words in ("cache export", "import", "repair", "FC_TUNED"):
        assert words in out, (words, out)
    code, out, _ = cli.run("plan", "--arch", "sm_80", "--head-dim", "128")
    assert code == EXIT_OK and "on sm_80" in out and "_sm_80\n" in out, out
    code, out, _ = cli.run("--json", "plan", "--arch", "sm_86", "--head-dim", "64")
    assert code == EXIT_OK and json.loads(out)["kernel"].endswith("_sm_86"), out
    code, out, err = cli.run("precompile", "--dry-run", "--arch", "sm_80")
    assert code == EXIT_OK and out.strip().endswith("pruned)") and "sm90" not in out, (code, out, err)


def test_warm_precompile_says_nothing_compiled(cli, directory):
    if not nvrtc_available(cli):
        return "skipped: NVRTC is not available here"
    path = os.path.join(directory, "small.yaml")
    cli.run("precompile", "--spec", path)
    code, out, err = cli.run("precompile", "--spec", path)
    summary = out.strip().splitlines()[-1]
    assert code == EXIT_OK and "none compiled" in summary and "median" not in summary, (summary, err)
    code, out, _ = cli.run("--json", "precompile", "--spec", path)
    warm = json.loads(out.strip().splitlines()[-1])
    assert warm["compiled"] == 0 and warm["median_compile_ms"] is None, warm


def test_varlen_and_seqused_k_plan_and_explain(cli):
    code, out, _ = cli.run("--json", "plan", "--varlen", "100,0,5000,7", "--heads-q", "32", "--heads-kv", "8",
                           "--causal")
    kernel = json.loads(out)["kernel"]
    assert code == EXIT_OK and kernel.startswith("sm90_f16_d128_causal_var_"), out
    assert "per-sequence lengths" in json.loads(out)["reason"], out
    code, out, _ = cli.run("--json", "plan", "--arch", "sm_80", "--varlen", "100,0,5000,7", "--causal")
    assert code == EXIT_OK and json.loads(out)["kernel"].startswith("sm80_f16_d128_causal_var_"), out
    code, out, _ = cli.run("--json", "plan", "--varlen", "1,1,0,1", "--varlen-k", "3000,10,0,77", "--seqused-k",
                           "2000,5,0,70", "--heads-q", "32", "--heads-kv", "8")
    assert code == EXIT_OK and json.loads(out)["kernel"].startswith("decode_f16_d128_var_"), out
    code, out, _ = cli.run("--json", "plan", "--batch", "4", "--seqlen-q", "1", "--seqlen-k", "4096",
                           "--seqused-k", "10,20,30,40")
    assert code == EXIT_OK and "_var_" in json.loads(out)["kernel"], out
    code, out, _ = cli.run("--json", "plan", "--batch", "4", "--seqlen-q", "1", "--seqlen-k", "4096")
    assert code == EXIT_OK and "_var_" not in json.loads(out)["kernel"], out
    code, out, err = cli.run("explain", "--varlen", "9,0,300")
    assert code == EXIT_OK and "per-sequence lengths" in out and "varlen (3 sequences" in out, (out, err)
    for args in (["plan", "--varlen", "1,x"], ["plan", "--varlen", "-1"], ["plan", "--varlen", ""],
                 ["plan", "--varlen-k", "5"], ["plan", "--varlen", "1,2", "--varlen-k", "1"],
                 ["explain", "--varlen", "1,2", "--seqused-k", "1"], ["plan", "--varlen", "4", "--seqused-k", "5"],
                 ["plan", "--batch", "2", "--seqused-k", "1,2,3"], ["run", "--varlen", "3,,4"]):
        code, _, err = cli.run(*args)
        assert code == EXIT_USAGE and err.strip(), (args, code, err)


def test_page_size_plan_and_explain(cli):
    code, out, _ = cli.run("--json", "plan", "--batch", "64", "--heads-q", "32", "--heads-kv", "8", "--seqlen-q", "1",
                           "--seqlen-k", "8192", "--page-size", "16", "--dtype", "bf16")
    assert code == EXIT_OK and json.loads(out)["kernel"].startswith("decode_bf16_d128_var_pg_"), out
    assert "paged K/V gathered" in json.loads(out)["reason"], out
    code, out, _ = cli.run("--json", "plan", "--varlen", "100,0,300", "--seqlen-k", "4096", "--seqused-k",
                           "50,0,4000", "--page-size", "1", "--causal")
    assert code == EXIT_OK and json.loads(out)["kernel"].startswith("sm90_f16_d128_causal_var_pg_"), out
    assert "gathered by the producer warpgroup" in json.loads(out)["reason"], out
    code, out, _ = cli.run("--json", "plan", "--varlen", "100,0,300", "--seqlen-k", "4096", "--seqused-k",
                           "50,0,4000", "--page-size", "1", "--causal", "--head-dim", "64")
    reason = json.loads(out)["reason"]
    assert code == EXIT_OK and json.loads(out)["kernel"].startswith("sm90_f16_d64_causal_var_pg_m64n128s2w8"), out
    assert "not of a multiple of 8" in reason, out   # gathered, and why
    code, out, _ = cli.run("--json", "plan", "--batch", "2", "--seqlen", "300", "--page-size", "128", "--arch", "sm_90a")
    assert code == EXIT_OK and json.loads(out)["kernel"].startswith("sm90_"), out
    assert "one TMA box inside one page" in json.loads(out)["reason"], out
    code, out, _ = cli.run("--json", "plan", "--batch", "2", "--seqlen", "300", "--page-size", "16")
    assert code == EXIT_OK and "several TMA boxes" in json.loads(out)["reason"], out   # 8 a tile, both
    code, out, _ = cli.run("--json", "plan", "--batch", "2", "--seqlen", "300", "--page-size", "8")
    assert code == EXIT_OK and "K by TMA boxes" in json.loads(out)["reason"], out   # 16 a tile: V gathered
    code, out, _ = cli.run("--json", "plan", "--batch", "2", "--seqlen", "300", "--page-size", "16", "--head-dim", "64")
    assert code == EXIT_OK and json.loads(out)["kernel"].startswith("sm90_"), out
    assert "several TMA boxes" in json.loads(out)["reason"], out
    code, out, _ = cli.run("--json", "plan", "--batch", "2", "--seqlen", "300", "--page-size", "16", "--arch", "sm_80")
    assert code == EXIT_OK and json.loads(out)["kernel"].startswith("sm80_"), out
    # the Hopper kernel's plain schedule (head_dim 64, forced) cannot read pages of 12: the plan says so
    code, _, err = cli.run("plan", "--variant", "sm90", "--batch", "2", "--seqlen", "300", "--page-size", "12",
                           "--head-dim", "64")
    assert code == EXIT_USAGE and "multiple of 8" in err, (code, err)
    code, out, err = cli.run("explain", "--batch", "2", "--seqlen", "300", "--page-size", "7")
    assert code == EXIT_OK and "paged (page 7" in out and "gathered" in out, (out, err)
    code, out, _ = cli.run("--json", "plan", "--batch", "2", "--seqlen", "300")
    assert code == EXIT_OK and "_pg_" not in json.loads(out)["kernel"], out
    for args in (["plan", "--page-size", "0"], ["plan", "--page-size", "x"],
                 ["plan", "--varlen", "1,2", "--varlen-k", "3,4", "--page-size", "16"],
                 ["run", "--page-size", "-4"]):
        code, _, err = cli.run(*args)
        assert code == EXIT_USAGE and err.strip(), (args, code, err)


def test_kv_dtype_e4m3_plan_and_explain(cli):
    decode = ("--batch", "8", "--heads-q", "32", "--heads-kv", "8", "--seqlen-q", "1", "--seqlen-k", "8192")
    code, out, _ = cli.run("--json", "plan", *decode, "--kv-dtype", "e4m3", "--dtype", "bf16", "--arch", "sm_90a")
    plan = json.loads(out)
    assert code == EXIT_OK and plan["kernel"].startswith("decode_bf16_d128_kv8_"), out
    assert "FP8 K/V" in plan["reason"], out
    code, out, _ = cli.run("plan", *decode, "--kv-dtype", "fp8", "--page-size", "16")   # fp8: the same
    assert code == EXIT_OK and " kv e4m3 " in out and "_var_pg_kv8_" in out, out
    # prefill: the sm80 kernel, and why not the Hopper one; sm_80 decode: the reference (no e4m3 cvt)
    code, out, _ = cli.run("--json", "plan", "--seqlen", "2048", "--causal", "--kv-dtype", "e4m3")
    plan = json.loads(out)
    assert code == EXIT_OK and plan["kernel"].startswith("sm80_f16_d128_causal_kv8_"), out
    assert "16-bit" in plan["reason"], out
    code, out, _ = cli.run("--json", "plan", *decode, "--kv-dtype", "e4m3", "--arch", "sm_80")
    assert code == EXIT_OK and json.loads(out)["kernel"].startswith("reference_f16_d128_kv8_"), out
    code, out, err = cli.run("explain", *decode, "--kv-dtype", "e4m3", "--varlen", "1,1,0,1")
    assert code == EXIT_OK and "kv e4m3" in out and "FP8 K/V (e4m3" in out, (out, err)
    code, out, _ = cli.run("--json", "plan", *decode, "--kv-dtype", "f16")   # --dtype's own: 16-bit K/V
    assert code == EXIT_OK and "_kv8" not in json.loads(out)["kernel"], out
    for args in (["plan", "--kv-dtype", "e4m3", "--head-dim", "24"], ["plan", "--kv-dtype", "bf16"],
                 ["plan", "--kv-dtype", "int4"], ["run", "--kv-dtype"], ["plan", "--kv-descale", "0.5"],
                 ["run", "--kv-dtype", "e4m3", "--kv-descale", "-1"], ["explain", "--kv-dtype", "bf16", "--dtype", "e4m3"]):
        code, _, err = cli.run(*args)
        assert code == EXIT_USAGE and err.strip(), (args, code, err)


def test_explain_tells_the_persistent_grids_order(cli):
    """explain (planned for an H100's 132 SMs without a GPU) tells a persistent causal grid's order: the
    counter's list at head_dim 64, the static pairs with a tail at 16-bit head_dim 128 (the GQA prefill
    row: 8 heads' blocks one a unit), the pairs alone at 256 and without a mask."""
    gqa = ["--dtype", "bf16", "--head-dim", "128", "--causal", "--batch", "4", "--heads-q", "32", "--heads-kv", "8",
           "--seqlen", "4096"]
    code, out, err = cli.run("--json", "explain", *gqa)
    assert code == EXIT_OK, (code, err)
    grid = json.loads(out)
    assert (grid["grid"], grid["units"], grid["scheduled"], grid["tail_heads"]) == (132, 16 * 120 + 32 * 8, False, 8), grid
    code, out, err = cli.run("explain", *gqa)
    assert code == EXIT_OK and "then the last 8 (batch, head)s' blocks one a unit, heaviest first" in out, out
    code, out, err = cli.run("--json", "explain", "--dtype", "bf16", "--head-dim", "64", "--causal", "--seqlen", "4096",
                             "--batch", "4", "--heads", "32")
    assert code == EXIT_OK and json.loads(out)["scheduled"] is True, out
    for args in (["--head-dim", "256", "--causal"], ["--head-dim", "128"]):
        code, out, err = cli.run("--json", "explain", "--dtype", "bf16", "--seqlen", "4096", "--batch", "4", *args)
        grid = json.loads(out)
        assert code == EXIT_OK and grid["units"] > 0 and not grid["scheduled"] and grid["tail_heads"] == 0, (args, out)


def test_explain_names_the_quick_first_call(cli):
    """explain names the quick first call's kernel where the planned one is the warp-specialized Hopper
    schedule, says why not elsewhere, and --no-quick-first-call (or FC_QUICK_FIRST_CALL=0) turns it off."""
    shape = ["--head-dim", "128", "--seqlen", "4096", "--causal"]
    code, out, err = cli.run("--json", "explain", *shape)
    assert code == EXIT_OK, (code, err)
    explained = json.loads(out)
    assert explained["quick_first_call"] == "sm90_f16_d128_causal_quick_m64n32s2w4_sm_90a", explained
    code, out, err = cli.run("explain", *shape)
    assert code == EXIT_OK and "first call: while the kernel is in neither cache, sm90_f16_d128_causal_quick_m64n32s2w4" in out, out
    for args, env in ((["--no-quick-first-call"], None), ([], dict(cli.env, FC_QUICK_FIRST_CALL="0"))):
        code, out, err = cli.run("explain", *shape, *args, env=env)
        assert code == EXIT_OK and "first call: the kernel itself (the quick first call is off)" in out, (args, out)
        code, out, err = cli.run("--json", "explain", *shape, *args, env=env)
        assert code == EXIT_OK and json.loads(out)["quick_first_call"] == "", (args, out)
    code, out, err = cli.run("explain", "--head-dim", "64", "--seqlen", "512")   # the plain schedule already
    assert code == EXIT_OK and "the kernel itself (no quicker kernel to compile for it)" in out, out
    code, out, err = cli.run("explain", "--dtype", "e4m3", "--seqlen", "4096")   # FP8 attention: none
    assert code == EXIT_OK and "no quicker kernel" in out, out


def test_fp8_attention_plan(cli):
    """--dtype e4m3: q, k and v e4m3 on the Hopper kernel (out bf16, or --out-dtype f16), the
    reference kernel where it declines, and each bad combination refused as bad input."""
    code, out, _ = cli.run("--json", "plan", "--dtype", "e4m3", "--seqlen", "4096", "--causal")
    plan = json.loads(out)
    assert code == EXIT_OK and plan["kernel"].startswith("sm90_bf16_d128_causal_kv8_q8_"), out
    assert "FP8 attention" in plan["reason"], out
    code, out, _ = cli.run("plan", "--dtype", "fp8", "--out-dtype", "f16", "--head-dim", "256")
    assert code == EXIT_OK and "e4m3 out f16" in out and "sm90_f16_d256_kv8_q8_" in out, out
    code, out, _ = cli.run("--json", "plan", "--dtype", "e4m3", "--head-dim", "96")
    assert code == EXIT_OK and json.loads(out)["kernel"].startswith("reference_bf16_d96_kv8_q8_"), out
    code, out, _ = cli.run("--json", "plan", "--dtype", "e4m3", "--arch", "sm_89")
    assert code == EXIT_OK and json.loads(out)["kernel"].startswith("reference_bf16_d128_kv8_q8_"), out
    for args in (["plan", "--dtype", "e4m3", "--out-dtype", "e4m3"], ["plan", "--dtype", "bf16", "--out-dtype", "f16"],
                 ["plan", "--out-dtype", "int8"], ["plan", "--dtype", "e4m3", "--head-dim", "24"],
                 ["plan", "--dtype", "e4m3", "--kv-dtype", "f16"]):
        code, _, err = cli.run(*args)
        assert code == EXIT_USAGE and err.strip(), (args, code, err)


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
            (test_quantize_checks_input_before_the_gpu, (cli,)),
            (test_bad_spec_names_line_and_column, (cli, directory)),
            (test_shipped_precompile_set_takes_the_shipped_winners, (cli,)),
            (test_precompile_fills_then_hits_the_cache, (cli, directory)),
            (test_verify_finds_a_corrupted_cubin_and_precompile_repairs_it, (cli, directory)),
            (test_tune_dry_run_pairs_buckets_with_candidates, (cli, directory)),
            (test_tune_dtype_picks_buckets, (cli, directory)),
            (test_tune_and_explain_without_gpu, (cli,)),
            (test_cache_export_import_round_trip, (cli, directory)),
            (test_help_never_acts, (cli, directory)),
            (test_unknown_flags_and_extra_arguments_exit_2, (cli, directory)),
            (test_clear_says_what_it_deletes, (cli, directory)),
            (test_unusable_cache_never_stops_info_or_plan, (cli, directory)),
            (test_damaged_cache_is_named_and_repaired, (cli, directory)),
            (test_untrusted_cache_is_not_loaded, (cli, directory)),
            (test_new_cache_is_private, (cli, directory)),
            (test_one_exit_code_rule, (cli, directory)),
            (test_warm_precompile_says_nothing_compiled, (cli, directory)),
            (test_varlen_and_seqused_k_plan_and_explain, (cli,)),
            (test_page_size_plan_and_explain, (cli,)),
            (test_kv_dtype_e4m3_plan_and_explain, (cli,)),
            (test_fp8_attention_plan, (cli,)),
            (test_explain_names_the_quick_first_call, (cli,)),
            (test_explain_tells_the_persistent_grids_order, (cli,)),
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

