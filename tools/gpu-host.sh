#!/usr/bin/env bash
# Runs on a GPU host from the repository root, with the bundle from tools/gpu-bundle.sh in .carry/.
# Logs and JSON go to $OUT (default /tmp/flashcore-out). Every step runs, whatever the last did;
# the summary at the end gives each step's exit code.
#   tools/gpu-host.sh check    gpu suite, Hopper probes, cold/warm/hot host costs, tools/check.py,
#                              compute-sanitizer, the sm80 tile sweep
#   tools/gpu-host.sh shapes   fcjit run over BENCH.md's shapes (checked, timed)
#   tools/gpu-host.sh perf     gpu suite, sanitizer, ncu on ours and FlashAttention-2, tile sweep,
#                              quick bench
#   tools/gpu-host.sh bench    tools/bench.py, BENCH.md's sweep against SDPA flash and cuDNN ($BENCH_ARGS: e.g. --labels fewq)
#   tools/gpu-host.sh decode   decode-kernel tiles on BENCH.md's decode shapes
#   tools/gpu-host.sh decode-sweep  gpu suite, decode sanitizer, tools/decode_sweep.py $DECODE_CONFIGS, ncu
#   tools/gpu-host.sh pack     the Hopper kernel's GQA-packed rows (issue 16): the gpu suite's packed schedules
#                              and selected kernels, sanitizers on them, side by side; then few query rows
#                              against many keys ($PACK_SHAPES) with $PACK_CONFIGS against the peers
#   tools/gpu-host.sh tune     `fcjit tune` from an empty database, or resumed from $TUNING_RESULTS, cut
#                              after $TUNE_CUT s; results exported to $OUT (run again to go on)
#   tools/gpu-host.sh tune-resume  the same, interrupted (SIGINT) after $TUNE_CUT s and resumed
#   tools/gpu-host.sh tuned-bench  the benchmark with tuned winners, the heuristic and the peers
#   tools/gpu-host.sh final    gpu suite, probes, sanitizer, the full tools/check.py matrix, the full
#                              benchmark (validate: all but the benchmark; bench: only that)
#   tools/gpu-host.sh ab       this build against a baseline bundle in .carry-base/ (tools/gpu-bundle.sh
#                              on the baseline commit, its .carry/ renamed): both precompiled, then
#                              BENCH.md's sweep with the baseline timed on the same tensors ($AB_ARGS:
#                              bench.py's rows, default --no-extra)
#   tools/gpu-host.sh ab-rounds  the same comparison by tools/ab_rounds.py: the two builds timed in
#                              alternation, each row's median ratio, the untouched kernels' rows as the
#                              noise floor ($ABR_ARGS: its rows and --noise-kernels, default --labels sweep,gqa)
#   tools/gpu-host.sh tune-ab  `fcjit tune --spec $TUNE_SPEC` from an empty database, then bench.py ($AB_ARGS)
#                              with those winners against the shipped ones (the same library on an
#                              empty cache, bench.py --baseline-db), the peers in the same process
#   tools/gpu-host.sh ncu-pair Nsight Compute's full set on ours and FA3 over $NCU_SHAPES (ncu_pair; a
#                              shape's seventh field e4m3: FP8 attention against FA3's fp8), reports,
#                              details and per-instruction SASS tables to $OUT
#                              (NCU_PRECOMPILE=0: without the precompile step first)
#   tools/gpu-host.sh compile-time  NVRTC's time on four sm90 sources, with $CT_SETS of
#                              tools/compile_time.py's option sets, then the host costs (cold first call)
#   tools/gpu-host.sh first-call  a new kernel's first call with and without the quick first call
#                              (tools/first_call.py), its gpu-suite test, check.py --quick-first-call, host costs
#   tools/gpu-host.sh merge    fc_attention_merge's tests, ring attention simulated on one GPU
#   tools/gpu-host.sh ring     ring attention on every GPU of the host (torchrun, NCCL): checked, and timed
#                              against one GPU at $RING_SEQLENS causal tokens (default 128k, 64k, 256k)
#   tools/gpu-host.sh report   BENCH.md's sweep with bench.py --report into $OUT/report
#   tools/gpu-host.sh gpu-suite-split  the gpu suite, one process per test (FC_GPU_TESTS), side by side
#   tools/gpu-host.sh checks   gpu suite, the package's GPU pytest suite and memcheck side by side
#                              (correctness only), then the CPU pytest suite
#   tools/gpu-host.sh sm90     the Hopper kernel: gpu suite, probes, sanitizer, tiles, quick bench
#   tools/gpu-host.sh variants the sm90 variants in $CHECK_VARIANTS: tools/check.py forced onto each,
#                              sanitizer on $SANITIZE_VARIANT, tile sweep, quick bench on each
#   tools/gpu-host.sh masks    windows, sinks, softcaps: gpu suite, tools/check.py's features matrix
#                              with each family forced, sanitizers with them, tools/bench_masks.py
#   tools/gpu-host.sh varlen   varlen batches and seqused_k (issue 13), correctness only, side by side:
#                              precompile, fcjit run over ragged batches with each family forced,
#                              the gpu suite's varlen test, memcheck on varlen sets (sm90: all three
#                              sanitizer tools), tools/check.py --matrix varlen per family
#                              ($VARLEN_PY_FAMILIES, default all four) and the package's varlen tests
#   tools/gpu-host.sh paged    a paged K/V cache (issue 13), correctness only, side by side: precompile,
#                              the gpu suite's paged test, fcjit run --page-size 1..256 with each family
#                              that takes paging forced (reference, sm80, decode, sm90 on pages of 1
#                              to 256), memcheck on paged sets (dense and varlen, pages of 1, 7 and 16),
#                              all three sanitizer tools on sm90's page paths (pages of 7, 16 and 128),
#                              tools/check.py --matrix paged per family (sm90 included)
#   tools/gpu-host.sh fp8kv    an FP8 KV cache (issue 15): tools/bench_fp8kv.py (decode, --prefill) alone, then side by side
#                              the gpu suite's FP8 tests, check.py --kv-dtype e4m3, the package's FP8
#                              tests, memcheck and racecheck on fcjit run --kv-dtype e4m3
#   tools/gpu-host.sh fp8      FP8 attention (issue 15): tools/bench_fp8.py alone, then side by side the gpu
#                              suite's FP8 attention tests, check.py --dtype e4m3, the package's FP8
#                              attention tests, memcheck and racecheck on fcjit run --dtype e4m3
#   tools/gpu-host.sh quantize fc_quantize (FP8 inputs, the Hadamard rotation): the gpu suite's test, fcjit
#                              quantize, sanitizers, the package's tests, bench_fp8.py --rotate (accuracy)
#   tools/gpu-host.sh paged-bench   a paged cache's speed (tools/bench_paged.py) and ncu on paged decode
#   tools/gpu-host.sh varlen-bench  ragged prefill vs our dense kernel and FA3 varlen (tools/bench_varlen.py)
#   tools/gpu-host.sh python   the flashcore package from python/ on the carried library (no pip):
#                              the GPU pytest suite, host time per call (op, ctypes, C, peers),
#                              `bench.py --report` on three rows into $OUT/report-smoke, the CPU suite
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT=${OUT:-/tmp/flashcore-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/.carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export FLASHCORE_LIB="$PWD/.carry/lib/libflashcore.so" PYTHONUNBUFFERED=1 FC_SOURCE_ROOT="$PWD"
# NOTE: the databases live in a private folder: FlashCore loads no kernel from a folder others can
# write (a plain /tmp), see the README's "What is trusted".
mkdir -p -m 700 /tmp/flashcore-gpu-host
export FCJIT="$PWD/.carry/bin/fcjit" DB=/tmp/flashcore-gpu-host/tuning.db
# The flashcore package straight from the checkout: it loads $FLASHCORE_LIB (no pip install here).
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
rm -f "$OUT/.steps"
# The peers of ../shared/PEERS.md (FA3, cudnn-frontend), where their wheels came along in .peers/ (a
# fresh GPU host has neither them nor a network): the benches time FA3 and cuDNN only if they load.
if compgen -G ".peers/*/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > "$OUT/peers-install.log" 2>&1 ||
        echo "gpu-host.sh: installing .peers/ failed (see $OUT/peers-install.log); the benches run without those peers"
fi

step() {   # step NAME TIMEOUT_S COMMAND: run (functions too), log to $OUT/NAME.log, keep the exit code
    local name=$1 limit=$2
    shift 2
    echo "=== $name: $*"
    local start=$SECONDS
    timeout "$limit" bash -c "$*" 2>&1 | tee "$OUT/$name.log"
    local rc=${PIPESTATUS[0]}
    # to a file too: steps run in the background (`step ... &`) cannot add to the parent's array
    printf '%-14s rc=%-3s %4ss\n' "$name" "$rc" $((SECONDS - start)) >> "$OUT/.steps"
}

run_shapes() {   # fcjit run over BENCH.md's shapes, one JSON line each
    local d s c
    for d in 64 128 256; do
        for s in 512 1024 2048 4096 8192 16384; do
            for c in "" --causal; do
                "$FCJIT" --db "$DB" --json run --batch $((16384 / s)) --seqlen $s --heads $((2048 / d)) \
                    --head-dim $d $c --check-rows 24 --iters 3 --warmup 1 || echo "{\"failed\": \"D=$d S=$s $c\"}"
            done
        done
    done
    "$FCJIT" --db "$DB" --json run --batch 2 --heads 8 --seqlen 512 --head-dim 64 --iters 20
    "$FCJIT" --db "$DB" --json run --batch 4 --heads-q 32 --heads-kv 8 --seqlen 4096 --head-dim 128 --causal --check-rows 24 --iters 3
    "$FCJIT" --db "$DB" --json run --batch 64 --heads-q 32 --heads-kv 8 --seqlen-q 1 --seqlen-k 8192 --head-dim 128 --iters 5
    "$FCJIT" --db "$DB" --json run --batch 8 --heads-q 32 --heads-kv 8 --seqlen-q 1 --seqlen-k 32768 --head-dim 128 --iters 5
}

host_costs() {   # cold (compile), warm (SQLite, new process), warm without NVRTC, hot per call
    rm -f "$DB" "$DB"-*
    local shape=(--batch 2 --heads 8 --seqlen 512 --head-dim ${HOST_HEAD_DIM:-64} --host-calls 2000)
    # NVRTC 12.9+ answers a source it compiled before from the driver's compute cache: off here
    echo "cold, no quick first call:"; CUDA_CACHE_DISABLE=1 "$FCJIT" --db "$DB" --json run "${shape[@]}" --no-quick-first-call
    rm -f "$DB" "$DB"-*
    echo "cold (the quick first call where the kernel takes one):"; CUDA_CACHE_DISABLE=1 "$FCJIT" --db "$DB" --json run "${shape[@]}"
    echo "warm:"; "$FCJIT" --db "$DB" --json run "${shape[@]}"
    echo "warm, NVRTC hidden:"; FC_NVRTC_LIBRARY=/nonexistent/libnvrtc.so "$FCJIT" --db "$DB" --json run "${shape[@]}"
}

sanitize() {   # every tool must exit 0 (--error-exitcode makes any finding nonzero)
    local tool d c failed=0 log
    log=$(mktemp)   # one per call: sanitizer steps run side by side
    for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
        for d in ${SANITIZE_DIMS:-64 96 128 256}; do
            for c in "" --causal; do
                compute-sanitizer --tool $tool --error-exitcode 9 "$FCJIT" --no-cache run ${SANITIZE_VARIANT:+--variant $SANITIZE_VARIANT} --batch 2 --heads-q 4 \
                    --heads-kv 2 --seqlen-q 129 --seqlen-k 200 --head-dim $d $c --iters 1 --warmup 0 \
                    --check-rows 8 ${SANITIZE_FLAGS:-} > "$log" 2>&1
                local rc=$?
                echo "$tool D=$d ${c:-full}: exit $rc; $(grep -E 'SUMMARY' "$log" | tr -s ' ')"
                [ $rc -eq 0 ] || { failed=1; cat "$log"; }
            done
        done
    done
    rm -f "$log"
    return $failed
}

checked_run() {   # checked_run LABEL LOG ARGS...: one `fcjit run ARGS` (its output to LOG); prints LABEL, its exit
                  # code and verdict, and LOG when it failed; returns its exit code
    local label=$1 log=$2
    shift 2
    "$FCJIT" --db "$DB" --json run "$@" > "$log" 2>&1
    local rc=$?
    echo "$label: exit $rc $(grep -o '"passed": [a-z]*' "$log")"
    [ $rc -eq 0 ] || cat "$log"
    return $rc
}

# A ragged prefill batch (empty, one-token and 5000-token sequences) and its seqused_k, for the
# varlen and paged loops
export RAGGED_Q=129,0,1,5000,64,300,17 RAGGED_USED=150,5,0,4999,1,300,999

varlen_runs() {   # fcjit run on ragged batches, each family in $VARLEN_FAMILIES forced; exit 1 on any failure
    local family d c g dt u failed=0 lens lens_k used out
    out=$(mktemp)   # one per call: the families run side by side
    for family in ${VARLEN_FAMILIES:-reference sm80 decode}; do
        for d in ${VARLEN_DIMS:-64 128 192 256}; do
            for c in "" --causal; do
                for g in 1 4 8; do
                    for dt in f16 bf16; do
                        if [ "$family" = decode ]; then   # one query per sequence: decode's packed rows
                            lens=1,0,1,1,1,1,1; lens_k=4999,7,0,1,128,777,3000; used=4000,7,0,1,100,777,2999
                        else
                            lens=$RAGGED_Q; lens_k=200,5,0,5000,63,300,1000; used=$RAGGED_USED
                        fi
                        for u in "" "--seqused-k $used"; do
                            checked_run "$family D=$d ${c:-full} GQA $g $dt ${u:+seqused}" "$out" --variant $family \
                                --varlen $lens --varlen-k $lens_k $u --heads-q $((2 * g)) --heads-kv 2 --head-dim $d \
                                --dtype $dt $c --check-rows 384 --iters 2 --warmup 0 || failed=1
                        done
                    done
                done
            done
        done
    done
    rm -f "$out"
    return $failed
}

python_matrix() {   # python_matrix KIND FAMILY...: tools/check.py --matrix KIND (varlen or paged), one process
                    # per family side by side, and the package's KIND tests; exit 1 if any failed (logs and
                    # JSON in $OUT/check-KIND-FAMILY.*)
    local kind=$1 family pids="" failed=0
    shift
    for family in "$@"; do
        FC_TUNING_DB=$DB python3 tools/check.py --matrix "$kind" --families "$family" --repeats "${CHECK_REPEATS:-20}" \
            --json "$OUT/check-$kind-$family.json" > "$OUT/check-$kind-$family.log" 2>&1 &
        pids="$pids $!"
    done
    FC_TUNING_DB=$DB python3 -m pytest -p no:cacheprovider -rs -q tests/python/test_gpu.py -k "$kind" || failed=1
    for pid in $pids; do wait "$pid" || failed=1; done
    for family in "$@"; do
        echo "--- check.py --matrix $kind --families $family"
        grep -E "FAIL|predates|passed, " "$OUT/check-$kind-$family.log" || tail -5 "$OUT/check-$kind-$family.log"
    done
    return $failed
}

tiles() {   # candidate tile shapes of the sm80 kernel, same problems, one JSON line each
    local d s c v
    for d in ${TILE_DIMS:-64 128}; do
        for s in ${TILE_SEQS:-2048 16384}; do
            for c in "" --causal; do
                for v in ${TILE_VARIANTS:-sm80 sm80:m128n128w8 sm80:m128n32w8 sm80:m64n64w4 sm80:m64n128w4 sm80:m128n64w4}; do
                    "$FCJIT" --db "$DB" --json run --variant $v --batch $((16384 / s)) --seqlen $s \
                        --heads $((2048 / d)) --head-dim $d $c --check-rows 16 --iters 10 --warmup 2 \
                        | sed "s/^{/{\"variant\": \"$v\", /" || echo "{\"failed\": \"$v D=$d S=$s $c\"}"
                done
            done
        done
    done
}

profile() {   # Nsight Compute on our kernel and on FlashAttention-2's, same problem (D128, 16k, fp16)
    local sections="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
        --section Occupancy --section LaunchStats --section InstructionStats --section SchedulerStats"
    ncu --clock-control none $sections -k regex:fc_attention_kernel -c 1 "$FCJIT" --no-cache run \
        --variant "${PROFILE_VARIANT:-sm80:m128n64w4}" --seqlen 16384 --heads 16 --head-dim 128 --iters 1 \
        --warmup 0 --check-rows 2
    ncu --clock-control none $sections -k regex:flash -c 1 python3 -c "
import torch
from torch.nn.attention import sdpa_kernel, SDPBackend
q, k, v = (torch.randn(1, 16, 16384, 128, device='cuda', dtype=torch.float16) for _ in range(3))
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    torch.nn.functional.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()"
}

ncu_pair() {   # Nsight Compute's full set (per-instruction stall sampling too) on ours and FA3, one problem
    # ($NCU_SHAPE: batch heads_q heads_kv seqlen head_dim causal(0/1) [dtype: bf16, or e4m3 for FP8
    # attention, FA3's fp8 with descales of 1]); reports and their text to $OUT
    local b hq hkv s d c dt
    read -r b hq hkv s d c dt <<< "${NCU_SHAPE:-4 32 8 4096 128 1}"
    dt=${dt:-bf16}
    local tag="b${b}h${hq}-${hkv}s${s}d${d}c${c}${dt/#bf16/}"
    ncu --clock-control none --set full --import-source no -k regex:fc_attention_kernel -c 1 -f -o "$OUT/ncu-ours-$tag" \
        "$FCJIT" --db "$DB" run --batch $b --heads-q $hq --heads-kv $hkv --seqlen $s --head-dim $d \
        $([ "$c" = 1 ] && echo --causal) --dtype $dt --iters 1 --warmup 0 --check-rows 2
    ncu --clock-control none --set full --import-source no -k regex:device_kernel -c 1 -f -o "$OUT/ncu-fa3-$tag" python3 -c "
import torch, fa3_fwd_interface
fp8 = '$dt' == 'e4m3'
q = torch.randn($b, $s, $hq, $d, device='cuda', dtype=torch.bfloat16)
k, v = (torch.randn($b, $s, $hkv, $d, device='cuda', dtype=torch.bfloat16) for _ in range(2))
scales = {}
if fp8:   # e4m3 codes of N(0, 1), descales of 1 per (batch, K/V head)
    q, k, v = (x.clamp(-6, 6).to(torch.float8_e4m3fn) for x in (q, k, v))
    one = torch.ones($b, $hkv, device='cuda', dtype=torch.float32)
    scales = dict(q_descale=one, k_descale=one, v_descale=one)
fa3_fwd_interface.flash_attn_func(q, k, v, causal=bool($c), **scales)
torch.cuda.synchronize()"
    local who
    for who in ours fa3; do
        ncu --import "$OUT/ncu-$who-$tag.ncu-rep" --page details --print-details all > "$OUT/ncu-$who-$tag.txt"
        ncu --import "$OUT/ncu-$who-$tag.ncu-rep" --page source --print-source sass --csv > "$OUT/ncu-$who-$tag-sass.csv"
        python3 tools/ncu_stalls.py --top 30 "$OUT/ncu-$who-$tag-sass.csv" > "$OUT/ncu-$who-$tag-stalls.txt"
    done
    python3 tools/ncu_stalls.py --mix "$OUT/ncu-ours-$tag-sass.csv" "$OUT/ncu-fa3-$tag-sass.csv" > "$OUT/ncu-mix-$tag.txt"
    # the device tool brings back a few files: the tables in one archive, the reports left out, and of
    # FA3's only its details page (metrics: its SASS table and stall list stay on the host, never in
    # the repository)
    (cd "$OUT" && tar czf "ncu-$tag.tgz" ncu-*-"$tag".txt ncu-ours-"$tag"-sass.csv ncu-ours-"$tag"-stalls.txt &&
        rm -f ncu-*-"$tag".ncu-rep ncu-*-"$tag"-sass.csv ncu-*-"$tag"-stalls.txt ncu-ours-"$tag".txt ncu-fa3-"$tag".txt)
    cat "$OUT/ncu-mix-$tag.txt"
}

paged_decode_profile() {   # Nsight Compute on paged decode (B64 Hq32 Hkv8 D128 Sk 8k bf16), pages of 1 and 16, and not paged
    local page sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
        --section SchedulerStats --section Occupancy"
    for page in 1 16 0; do
        echo "--- page ${page/#0/none}"
        ncu --clock-control none $sections -k regex:fc_attention_kernel -c 1 "$FCJIT" --db "$DB" run --batch 64 \
            --heads-q 32 --heads-kv 8 --head-dim 128 --seqlen-q 1 --seqlen-k 8192 --dtype bf16 \
            $([ "$page" = 0 ] || echo --page-size "$page") --iters 1 --warmup 0 --check-rows 2
    done
}

check_variants() {   # tools/check.py forced onto each variant in turn (head dims it takes)
    local v failed=0
    for v in $CHECK_VARIANTS; do
        echo "--- $v"
        FC_FORCE_VARIANT=$v python3 tools/check.py --head-dims "${CHECK_DIMS:-64,96,128,160,192,224,256}" --repeats 5 \
            --json "$OUT/check-${v//:/-}.json" | tail -3 || failed=1
    done
    return $failed
}

bench_variants() {   # the quick benchmark forced onto each variant; peers timed in each run
    local v
    for v in $BENCH_VARIANTS; do
        echo "--- $v"
        FC_FORCE_VARIANT=$v python3 tools/bench.py --quick --no-extra --dims "${BENCH_DIMS:-64,128,256}" \
            --json "$OUT/bench-${v//:/-}.json" | tail -12
    done
}

decode_tiles() {   # decode variants on BENCH.md's decode shapes and a GQA-1 one, checked, timed
    local v shape
    for shape in "--batch 64 --heads-q 32 --heads-kv 8 --seqlen-k 8192" "--batch 8 --heads-q 32 --heads-kv 8 --seqlen-k 32768" \
                 "--batch 16 --heads-q 32 --heads-kv 32 --seqlen-k 4096"; do
        for v in ${DECODE_VARIANTS:-decode decode:n128w4s2 decode:n128w4s3 decode:n64w4s4 decode:n128w8s2 decode:n256w8s2 decode:n64w2s4}; do
            "$FCJIT" --db "$DB" --json run --variant $v $shape --seqlen-q 1 --head-dim 128 --check-rows 16 --iters 20 \
                --warmup 3 | sed "s/^{/{\"variant\": \"$v\", /" || echo "{\"failed\": \"$v $shape\"}"
        done
    done
}

paged_runs() {   # fcjit run through a paged K/V cache, each family in $PAGED_FAMILIES forced; exit 1 on any failure
    local family page d c g dt form failed=0 shape out i=0
    out=$(mktemp)   # one per call: the families run side by side
    for family in ${PAGED_FAMILIES:-reference sm80 decode}; do
        for page in ${PAGED_SIZES:-1 7 16 64 128 256}; do
            for d in ${PAGED_DIMS:-64 128 256}; do
                for c in "" --causal; do
                    for g in 1 4 8; do
                        i=$((i + 1)); dt=$([ $((i % 2)) = 0 ] && echo f16 || echo bf16)
                        # dense queries and varlen ones with seqused_k in turn (decode: one query per sequence)
                        if [ $((i % 3)) = 0 ]; then
                            form=varlen
                            if [ "$family" = decode ]; then
                                shape="--varlen 1,0,1,1,1,1,1 --seqlen-k 5000 --seqused-k 4000,7,0,1,100,777,4999"
                            else
                                shape="--varlen $RAGGED_Q --seqlen-k 5000 --seqused-k $RAGGED_USED"
                            fi
                        else
                            form=dense
                            shape="--batch 3 --seqlen-q $([ "$family" = decode ] && echo 1 || echo 129) --seqlen-k 1000"
                        fi
                        checked_run "$family page $page D=$d ${c:-full} GQA $g $dt $form" "$out" --variant $family \
                            $shape --page-size $page --heads-q $((2 * g)) --heads-kv 2 --head-dim $d --dtype $dt $c \
                            --check-rows 256 --iters 2 --warmup 0 || failed=1
                    done
                done
            done
        done
    done
    rm -f "$out"
    return $failed
}

sanitize_decode() {   # the split-KV pair (and its scratch) under every tool
    local tool failed=0 log
    log=$(mktemp)
    for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
        compute-sanitizer --tool $tool --error-exitcode 9 "$FCJIT" --no-cache run ${SANITIZE_VARIANT:+--variant $SANITIZE_VARIANT} \
            --batch 2 --heads-q 8 --heads-kv 2 --seqlen-q 2 --seqlen-k 5000 --head-dim 128 --causal --iters 1 --warmup 0 --check-rows 8 \
            ${SANITIZE_FLAGS:-} > "$log" 2>&1
        local rc=$?
        echo "$tool decode: exit $rc; $(grep -E 'SUMMARY' "$log" | tr -s ' ')"
        [ $rc -eq 0 ] || { failed=1; cat "$log"; }
    done
    rm -f "$log"
    return $failed
}

decode_profile() {   # Nsight Compute: our decode configurations ($PROFILE_CONFIGS) and cuDNN's, B64 Sk 8k
    local metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_read.sum.per_second,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size,\
launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__occupancy_limit_shared_mem,\
sm__warps_active.avg.pct_of_peak_sustained_active,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum
    ncu --clock-control none --metrics $metrics -k regex:'fc_|cudnn|sdpa|fmha|flash' \
        python3 tools/decode_sweep.py --once ${PROFILE_CONFIGS:-default}
}

export_tuning() {   # every measurement of $DB and its winners, to $OUT
    "$FCJIT" --db "$DB" cache export "$OUT/tuning-results.tsv" &&
        "$FCJIT" --db "$DB" cache export --winners "$OUT/winners.tsv"
}

export -f decode_tiles sanitize_decode decode_profile export_tuning
export -f checked_run paged_decode_profile ncu_pair paged_runs varlen_runs python_matrix run_shapes host_costs sanitize tiles profile check_variants bench_variants

case "${1:-check}" in
check)
    step env 60 "nvidia-smi; python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())'; \$FCJIT info"
    step gpu-suite 400 .carry/bin/test_gpu
    step hopper 120 .carry/bin/test_hopper
    step host-costs 120 host_costs
    step check-py 300 python3 tools/check.py --quick --json "$OUT/check.json"
    step sanitizer 300 sanitize
    step tiles 300 tiles
    ;;
shapes)
    step fcjit-run 500 run_shapes
    ;;
perf)
    step gpu-suite 400 .carry/bin/test_gpu
    step hopper 120 .carry/bin/test_hopper
    step sanitizer 300 sanitize
    step profile 240 profile
    step tiles 300 tiles
    step bench-quick 300 python3 tools/bench.py --quick --no-extra --json "$OUT/bench-quick.json"
    ;;
hopper)
    step hopper 120 .carry/bin/test_hopper
    ;;
tiles)
    step tiles 500 tiles
    ;;
host)
    step host-costs 120 host_costs
    ;;
ncu-pair)   # Nsight Compute's full set on ours and FA3 ($NCU_SHAPES: shapes for ncu_pair, ';'-separated;
            # NCU_PRECOMPILE=0: no precompile step, each shape's kernel compiled by its own run)
    [ "${NCU_PRECOMPILE:-1}" = 0 ] || step precompile 200 "\$FCJIT --db \$DB precompile --arch sm_90a"
    IFS=';' read -ra shapes <<< "${NCU_SHAPES:-4 32 8 4096 128 1}"
    for sh in "${shapes[@]}"; do
        step "ncu-${sh// /-}" 300 "NCU_SHAPE='$sh' ncu_pair"
    done
    ;;
compile-time)   # NVRTC's time on the sm90 sources a cold call compiles (tools/compile_time.py, $CT_SETS)
    printf 'version: 1\nvariants:\n  - kernel: sm90\n    arch: sm_90a\n    dtype: f16\n    head_dim: [64, 128]\n    causal: [false, true]\n' \
        > /tmp/flashcore-gpu-host/ct.yaml
    step ct-sources 120 "rm -rf \$OUT/ct-src && mkdir -p \$OUT/ct-src && FC_DUMP_SOURCE=\$OUT/ct-src \$FCJIT --no-cache precompile \
        --spec /tmp/flashcore-gpu-host/ct.yaml --jobs 1"
    step compile-time 400 "python3 tools/compile_time.py --sets ${CT_SETS:-base,mid,max} \$OUT/ct-src/*.cu"
    step host-costs 120 host_costs
    ;;
first-call)   # a new kernel's first call with and without the quick first call (tools/first_call.py), and its checks
    step first-call 300 "CUDA_CACHE_DISABLE=1 python3 tools/first_call.py --rounds 3 --json \$OUT/first_call.json"
    step gpu-suite-quick 200 "FC_GPU_TESTS=test_quick_first_call .carry/bin/test_gpu"
    step check-quick 300 "python3 tools/check.py --quick-first-call --matrix base --head-dims 128,256 --repeats 2"
    step host-costs 120 "HOST_HEAD_DIM=128 host_costs"
    ;;
sm90)
    step gpu-suite 400 .carry/bin/test_gpu
    step hopper 120 .carry/bin/test_hopper
    step sanitizer 300 "SANITIZE_VARIANT=sm90 SANITIZE_DIMS='64 128' sanitize"
    step tiles 300 "TILE_VARIANTS='${SM90_TILES:-sm80 sm90 sm90:n64 sm90:n128}' tiles"
    step bench-sm90 300 "FC_FORCE_VARIANT=sm90 python3 tools/bench.py --quick --no-extra --json $OUT/bench-sm90.json"
    ;;
variants)
    step hopper 120 .carry/bin/test_hopper
    step check-variants 400 check_variants
    step sanitizer 300 sanitize
    step tiles 400 tiles
    step bench-variants 400 bench_variants
    ;;
decode)
    step decode-tiles 300 decode_tiles
    ;;
gpu-suite-split)   # the gpu suite, one process per test, side by side: the CPU reference's work spread
    step precompile 200 "\$FCJIT --db \$DB precompile --arch sm_90a"
    export FC_TUNING_DB=$DB   # the precompiled kernels, one database for every process
    for t in $(grep -o 'cmocka_unit_test([a-z0-9_]*)' tests/test_gpu.c | sed 's/cmocka_unit_test(\(.*\))/\1/'); do
        if [ "$t" = test_sm90_kernel_matches_reference_over_awkward_shapes ]; then   # its schedules apart
            for i in $(seq 0 $(( $(sed -n '/SM90_FORCED\[\] = {/,/^};/p' tests/test_gpu.c | grep -c '{"sm90') - 1 ))); do
                step "${t#test_}-$i" 560 "FC_GPU_TESTS=$t FC_GPU_SM90_SCHEDULE=$i .carry/bin/test_gpu" &
            done
            continue
        fi
        step "${t#test_}" 560 "FC_GPU_TESTS=$t .carry/bin/test_gpu" &
    done
    wait
    ;;
masks-checks)   # windows, sinks and softcaps, correctness only, side by side (fits one 10-minute call)
    step precompile 200 "\$FCJIT --db \$DB precompile --arch sm_90a"
    step gpu-suite 540 .carry/bin/test_gpu &
    step check-masks 540 "for f in reference sm80 sm90 decode; do FC_TUNING_DB=\$DB python3 tools/check.py \
        --matrix features --families \$f --repeats \${CHECK_REPEATS:-3} | tail -4 || exit 1; done" &
    step python-gpu 400 "FC_TUNING_DB=\$DB python3 -m pytest -p no:cacheprovider -rs -q tests/python/test_gpu.py" &
    step memcheck 400 "SANITIZE_TOOLS=memcheck SANITIZE_DIMS='64 128' SANITIZE_FLAGS='--window-left 40 --sinks 5 \
        --softcap 30' sanitize" &
    wait
    ;;
varlen)   # varlen batches and seqused_k (issue 13), correctness only, side by side (one 10-minute call)
    step precompile 200 "\$FCJIT --db \$DB precompile --arch sm_90a"
    step gpu-varlen 540 "FC_GPU_TESTS='test_varlen*' .carry/bin/test_gpu" &
    for family in reference sm80 decode sm90; do
        step varlen-$family 540 "VARLEN_FAMILIES=$family varlen_runs | tail -60" &
    done
    step memcheck 400 "SANITIZE_TOOLS=memcheck SANITIZE_VARIANT=sm80 SANITIZE_DIMS='64 128' SANITIZE_FLAGS='--varlen \
        129,0,1,77 --varlen-k 200,5,0,300 --seqused-k 150,5,0,299' sanitize; SANITIZE_TOOLS=memcheck SANITIZE_DIMS=128 \
        SANITIZE_FLAGS='--varlen 1,0,1 --varlen-k 3000,4,0 --seqused-k 2000,4,0' sanitize; \
        SANITIZE_VARIANT=sm90 SANITIZE_DIMS='64 128 256' SANITIZE_FLAGS='--varlen 129,0,1,77 \
        --varlen-k 200,5,0,300 --seqused-k 150,5,0,299' sanitize" &
    step python-varlen 540 "python_matrix varlen \${VARLEN_PY_FAMILIES:-reference sm80 decode sm90}" &
    wait
    ;;
paged)   # a paged K/V cache (issue 13), correctness only, side by side (one 10-minute call)
    step precompile 200 "\$FCJIT --db \$DB precompile --arch sm_90a"
    step gpu-paged 540 "FC_GPU_TESTS='test_paged*' .carry/bin/test_gpu" &
    for family in reference sm80 decode; do
        step paged-$family 540 "PAGED_FAMILIES=$family paged_runs | tail -60" &
    done
    # the Hopper kernel's TMA page path, forced (pages of a multiple of 8: boxes of gcd(page, block_n)
    # tokens), and under all three tools on pages of several boxes per tile and of one
    step paged-sm90 540 "PAGED_FAMILIES=sm90 PAGED_SIZES='8 16 64 192 256' PAGED_DIMS='64 128 192 256' paged_runs \
        | tail -60; PAGED_FAMILIES=sm90 PAGED_SIZES='1 7 12' PAGED_DIMS='128 192 256' paged_runs | tail -60" &
    step sanitize-sm90 540 "SANITIZE_VARIANT=sm90 SANITIZE_DIMS='64 128' SANITIZE_FLAGS='--page-size 16 \
        --seqused-k 150,3' sanitize; SANITIZE_VARIANT=sm90 SANITIZE_DIMS='128 256' SANITIZE_FLAGS='--page-size 7 \
        --seqused-k 150,3' sanitize; SANITIZE_VARIANT=sm90 SANITIZE_DIMS=128 SANITIZE_FLAGS='--page-size 128 \
        --seqused-k 150,3' sanitize; SANITIZE_VARIANT=sm90:m64n128w8s2 SANITIZE_DIMS=64 SANITIZE_FLAGS='--page-size 8 \
        --seqused-k 150,3' sanitize; SANITIZE_VARIANT=sm90:m64n128w8s2 SANITIZE_DIMS=64 SANITIZE_FLAGS='--page-size 7 \
        --seqused-k 150,3' sanitize" &
    step memcheck 480 "SANITIZE_TOOLS=memcheck SANITIZE_VARIANT=sm80 SANITIZE_DIMS='64 128' SANITIZE_FLAGS='--page-size 7 \
        --seqused-k 150,3' sanitize; SANITIZE_TOOLS=memcheck SANITIZE_VARIANT=sm80 SANITIZE_DIMS=128 \
        SANITIZE_FLAGS='--varlen 129,0,1,77 --seqlen-k 300 --seqused-k 150,5,0,299 --page-size 16' sanitize; \
        SANITIZE_TOOLS=memcheck SANITIZE_VARIANT=reference SANITIZE_DIMS=128 SANITIZE_FLAGS='--page-size 1' sanitize; \
        SANITIZE_TOOLS=memcheck SANITIZE_VARIANT=decode SANITIZE_FLAGS='--page-size 1 --seqused-k 4999,17' \
        sanitize_decode; SANITIZE_TOOLS=memcheck SANITIZE_VARIANT=decode SANITIZE_FLAGS='--page-size 16' sanitize_decode" &
    step python-paged 540 "python_matrix paged \${PAGED_PY_FAMILIES:-reference sm80 decode sm90}" &
    wait
    ;;
fp8kv)   # an FP8 KV cache (issue 15): its speed alone (tools/bench_fp8kv.py: decode, then --prefill),
         # then correctness side by side: the gpu suite's FP8 tests, tools/check.py --kv-dtype e4m3
         # (decode, sm80 and reference forced, and the selector: decode, sm80 for prefill), the
         # package's FP8 tests, memcheck and racecheck on fcjit run (the last shape: prefill on sm80)
    step bench-fp8kv 200 "FC_TUNING_DB=\$DB python3 tools/bench_fp8kv.py --json $OUT/bench-fp8kv.json"
    step bench-fp8kv-prefill 200 "FC_TUNING_DB=\$DB python3 tools/bench_fp8kv.py --prefill --dtypes bf16 \
        --json $OUT/bench-fp8kv-prefill.json"
    for t in in_the_decode_kernel in_the_sm80_kernel in_the_reference_kernel as_selected; do
        step gpu-fp8-${t#in_the_} 540 "FC_GPU_TESTS=test_fp8_kv_matches_reference_$t .carry/bin/test_gpu | tail -30" &
    done
    step check-fp8 540 "python3 tools/check.py --kv-dtype e4m3 --quick --families decode,sm80,reference --repeats 3 \
        | tail -4 && python3 tools/check.py --kv-dtype e4m3 --matrix features --head-dims 64,96,128,256 \
        --families decode,sm80 --repeats 3 | tail -4" &
    step check-fp8-base 540 "python3 tools/check.py --kv-dtype e4m3 --matrix base --head-dims 64,128,256 \
        --families decode --repeats 3 | tail -4 && python3 tools/check.py --kv-dtype e4m3 --matrix base \
        --head-dims 96,128 --repeats 3 | tail -4" &
    step python-fp8 400 "python3 -m pytest -p no:cacheprovider -rs -q tests/python/test_gpu.py -k fp8" &
    step sanitize-fp8 540 "set -o pipefail; for tool in memcheck racecheck; do for dt in bf16 f16; do for shape in \
        '--batch 4 --seqlen-q 1 --seqlen-k 3000 --heads-q 32 --heads-kv 8 --head-dim 128' \
        '--batch 2 --seqlen-q 2 --seqlen-k 777 --heads-q 8 --heads-kv 1 --head-dim 256 --causal --window-left 300 --sinks 5 --softcap 30' \
        '--batch 3 --seqlen-q 1 --seqlen-k 1000 --heads-q 16 --heads-kv 4 --head-dim 64 --page-size 16' \
        '--batch 1 --seqlen-q 100 --seqlen-k 300 --heads-q 8 --heads-kv 2 --head-dim 128 --causal' \
        '--batch 1 --seqlen-q 200 --seqlen-k 500 --heads-q 8 --heads-kv 2 --head-dim 64 --page-size 16 --window-left 100 --softcap 30 --sinks 3'; do \
        compute-sanitizer --tool \$tool --error-exitcode 9 \$FCJIT run \$shape --dtype \$dt --kv-dtype e4m3 \
        --iters 1 --warmup 0 | grep -E 'SUMMARY' || exit 1; done; done; done" &
    wait
    ;;
fp8)   # FP8 attention (issue 15: q, k and v e4m3): its speed alone (tools/bench_fp8.py: against FA3's and
       # cuDNN's fp8 and our bf16, and the relative RMSE table), then correctness side by side: the gpu
       # suite's FP8 attention tests, tools/check.py --dtype e4m3 (sm90 and reference forced, and the
       # selector), the package's FP8 tests, memcheck and racecheck on fcjit run
    step precompile 200 "\$FCJIT --db \$DB precompile --arch sm_90a"
    export FC_TUNING_DB=$DB   # the precompiled kernels, one database for every process
    step bench-fp8 400 "python3 tools/bench_fp8.py --json $OUT/bench-fp8.json"
    for t in in_the_sm90_kernel in_the_reference_kernel as_selected; do
        step gpu-fp8-attention-${t#in_the_} 540 "FC_GPU_TESTS=test_fp8_attention_matches_reference_$t \
            .carry/bin/test_gpu | tail -30" &
    done
    step check-fp8-attention 540 "python3 tools/check.py --dtype e4m3 --out-dtype bf16,f16 --quick \
        --families sm90,reference --repeats 3 | tail -4 && python3 tools/check.py --dtype e4m3 --matrix features \
        --head-dims 64,128,192,256 --families sm90 --repeats 3 | tail -4" &
    step python-fp8-attention 400 "python3 -m pytest -p no:cacheprovider -rs -q tests/python/test_gpu.py -k fp8_attention" &
    step sanitize-fp8-attention 540 "set -o pipefail; for tool in memcheck racecheck; do for shape in \
        '--batch 2 --seqlen-q 300 --seqlen-k 400 --heads-q 4 --heads-kv 2 --head-dim 128 --causal' \
        '--batch 1 --seqlen 260 --heads 2 --head-dim 64 --window-left 50 --softcap 30 --sinks 3' \
        '--batch 1 --seqlen 200 --heads 2 --head-dim 256 --out-dtype f16' \
        '--batch 1 --seqlen 300 --heads 2 --head-dim 192 --causal' \
        '--varlen 17,0,1,128,129,300 --varlen-k 40,7,0,128,1000,300 --heads-q 4 --heads-kv 2 --head-dim 128 --causal' \
        '--varlen 100,200,5 --seqused-k 90,1,5 --seqlen-k 300 --heads 2 --head-dim 256 --window-left 50'; do \
        compute-sanitizer --tool \$tool --error-exitcode 9 \$FCJIT run \$shape --dtype e4m3 \
        --iters 1 --warmup 0 | grep -E 'SUMMARY' || exit 1; done; done" &
    wait
    ;;
quantize)   # fc_quantize (issue 15: 16-bit to e4m3, the optional Hadamard rotation): the gpu suite's test,
            # fcjit quantize over head dims, scalings, varlen and outliers, both sanitizers, the
            # package's tests, then FP8 attention's accuracy with and without the rotation
            # (tools/bench_fp8.py --rotate, N(0, 1) inputs and outlier dimensions)
    step precompile 200 "\$FCJIT --db \$DB precompile --arch sm_90a"
    export FC_TUNING_DB=$DB
    step gpu-quantize 300 "FC_GPU_TESTS=test_quantize_matches_reference .carry/bin/test_gpu | tail -20" &
    step fcjit-quantize 300 "set -o pipefail; for args in '--head-dim 128 --rotate --outliers 30' \
        '--head-dim 128 --rotate' '--head-dim 64 --heads 32 --descale-heads 8 --rotate --outliers 30' \
        '--head-dim 192 --scaling tensor --rotate --outliers 30' '--head-dim 256 --rotate --outliers 30' \
        '--head-dim 96 --scaling given --rotate' '--varlen 0,1000,33,1,517 --head-dim 128 --rotate --outliers 30' \
        '--head-dim 128 --out-dtype bf16 --rotate' '--head-dim 64 --dtype f16 --out-dtype f16 --rotate \
        --varlen 5,0,77' '--batch 1 --seqlen 65536 --heads 8 --head-dim 128 --rotate'; do \
        echo \"--- \$args\"; \$FCJIT quantize \$args || exit 1; done" &
    step python-quantize 400 "python3 -m pytest -p no:cacheprovider -rs -q tests/python/test_gpu.py -k 'quantize or rotate'" &
    step check-quantized 400 "python3 tools/check.py --dtype e4m3 --out-dtype bf16,f16 --quick --quantize library \
        --rotate --families sm90,reference --repeats 3 | tail -3" &
    step sanitize-quantize 400 "set -o pipefail; for tool in memcheck racecheck; do for args in \
        '--batch 2 --seqlen 300 --heads 8 --descale-heads 2 --head-dim 128 --rotate' \
        '--varlen 3,0,70 --heads 4 --head-dim 192 --scaling tensor' \
        '--seqlen 100 --heads 2 --head-dim 64 --out-dtype bf16 --rotate'; do \
        compute-sanitizer --tool \$tool --error-exitcode 9 \$FCJIT quantize \$args | grep -E 'SUMMARY' || exit 1; \
        done; done" &
    wait
    step bench-fp8-rotate 400 "python3 tools/bench_fp8.py --dims 64,128,256 --seqlens 1024,4096,16384 --rotate \
        --json $OUT/bench-fp8-rotate.json"
    step bench-fp8-rotate-outliers 400 "python3 tools/bench_fp8.py --dims 64,128,256 --seqlens 1024,4096,16384 \
        --rotate --outliers 30 --json $OUT/bench-fp8-rotate-outliers.json"
    ;;
paged-bench)   # a paged cache's speed (issue 13): tools/bench_paged.py (decode against the copy bandwidth,
               # chunked prefill against our non-paged run and FA3's varlen), then ncu on paged decode
    step precompile 200 "\$FCJIT --db \$DB precompile --arch sm_90a"
    step bench-paged 400 "FC_TUNING_DB=\$DB python3 tools/bench_paged.py --chunk-pages \${CHUNK_PAGES:-16,64} \
        --json $OUT/bench-paged.json"
    step ncu-paged 300 paged_decode_profile
    ;;
varlen-bench)   # ragged prefill against our dense kernel and FA3's varlen (issue 13): tools/bench_varlen.py
    step precompile 200 "\$FCJIT --db \$DB precompile --arch sm_90a"
    step bench-varlen 400 "FC_TUNING_DB=\$DB python3 tools/bench_varlen.py --batches \${VARLEN_BATCHES:-8} \
        --json $OUT/bench-varlen.json"
    ;;
masks)   # windows, sinks and softcaps (issue 14): each family forced, sanitizers, then their speed
    step gpu-suite 580 .carry/bin/test_gpu
    for family in reference sm80 sm90 decode; do
        step check-$family 580 "python3 tools/check.py --matrix features --families $family --repeats 20 \
            --json $OUT/check-masks-$family.json"
    done
    step sanitizer 300 "SANITIZE_DIMS='64 128' SANITIZE_FLAGS='--window-left 40 --sinks 5 --softcap 30' sanitize"
    step sanitize-decode 120 "SANITIZE_FLAGS='--window-left 300 --sinks 20 --softcap 50' sanitize_decode"
    step bench-masks 580 "python3 tools/bench_masks.py --json $OUT/bench-masks.json"
    ;;
python)   # the package on the carried library (~5 min): GPU suite, host costs, report smoke, CPU suite
    step python-env 60 "python3 -c 'import flashcore, torch; print(flashcore.info()); print(\"torch\", torch.__version__)'"
    step precompile 120 "\$FCJIT --db \$DB precompile --arch \${PYTHON_ARCH:-sm_90a}"
    step python-gpu 300 "FC_TUNING_DB=\$DB python3 -m pytest -p no:cacheprovider -rs -v tests/python/test_gpu.py"
    step host-overhead 60 "FC_TUNING_DB=\$DB python3 tools/host_overhead.py --json $OUT/host-overhead.json; \
        echo 'the C API from C (fcjit run --host-calls):'; \$FCJIT --db \$DB --json run --batch 1 --heads 2 --seqlen 128 --head-dim 64 --host-calls 2000"
    step report-smoke 120 "FC_TUNING_DB=\$DB python3 tools/bench.py --quick --dims 64 --causal no --no-extra --report $OUT/report-smoke"
    step python-cpu 120 "python3 -m pytest -p no:cacheprovider -rs tests/python --ignore=tests/python/test_gpu.py"
    ;;
decode-sweep)   # correctness of every kernel, then what decode-quick does
    step gpu-suite 400 .carry/bin/test_gpu
    ;&
decode-quick)   # decode sanitizer, decode configurations vs the peers, ncu
    step sanitize-decode 120 sanitize_decode
    step decode-sweep 300 "python3 tools/decode_sweep.py \${DECODE_CONFIGS:-} --json $OUT/decode-sweep.json"
    step decode-profile 200 decode_profile
    ;;
pack)   # GQA-packed rows on the Hopper kernel: correctness side by side, then the few-query shapes alone
    step precompile 120 "\$FCJIT --db \$DB precompile --arch sm_90a"
    export FC_TUNING_DB=$DB
    for i in $(sed -n '/SM90_FORCED\[\] = {/,/^};/p' tests/test_gpu.c | grep '{"sm90' | grep -n 'g1\(k[0-9]*\)\?"' | cut -d: -f1); do
        step "sm90-schedule-$((i - 1))" 300 "FC_GPU_TESTS=test_sm90_kernel_matches_reference_over_awkward_shapes \
            FC_GPU_SM90_SCHEDULE=$((i - 1)) .carry/bin/test_gpu" &
    done
    step selected 300 "FC_GPU_TESTS=test_selected_kernels_match_reference_over_awkward_shapes .carry/bin/test_gpu" &
    step sanitize-pack 300 "SANITIZE_VARIANT=sm90:g1 SANITIZE_DIMS='64 128' sanitize && SANITIZE_VARIANT=sm90:m64w8g1 \
        SANITIZE_DIMS='128 256' SANITIZE_FLAGS='--heads-q 6' sanitize && SANITIZE_VARIANT=sm90:m64n64w8g1 \
        SANITIZE_DIMS='64 128' SANITIZE_FLAGS='--heads-q 16' sanitize && SANITIZE_VARIANT=sm90:m64w8g1k3 \
        SANITIZE_DIMS='64 128' SANITIZE_FLAGS='--heads-q 16 --seqlen-q 3 --seqlen-k 2000' sanitize" &
    wait
    step pack-sweep 300 "python3 tools/decode_sweep.py \${PACK_CONFIGS:-default decode sm90 sm90:g1 sm90:m64w8g1} \
        --dtype bf16 --json \$OUT/pack-sweep.json --shapes \${PACK_SHAPES:-8,32,8,16,16000,causal 8,64,8,16,16000,causal}"
    ;;
tune)   # the default sweep from an empty database (compiles included), or resumed from the results of
        # an earlier call ($TUNING_RESULTS), cut with SIGINT after $TUNE_CUT s (one device call is 10
        # min; the whole sweep takes about 20 on an H100), then its results out ($TUNE_ARGS: e.g.
        # --dtype e4m3); run it again with TUNING_RESULTS=<the last tuning-results.tsv> to go on
    export DB=/tmp/flashcore-gpu-host/tune.db
    rm -f "$DB" "$DB"-*
    [ -n "${TUNING_RESULTS:-}" ] && "$FCJIT" --db "$DB" cache import "$TUNING_RESULTS"
    step tune $((${TUNE_CUT:-540} + 30)) "timeout -s INT ${TUNE_CUT:-540} \$FCJIT --db \$DB tune ${TUNE_ARGS:-}; \
        echo \"tune exit \$?\"; export_tuning"
    ;;
tune-resume)   # the default sweep interrupted with SIGINT after $TUNE_CUT s, then resumed to the end
    export DB=/tmp/flashcore-gpu-host/tune.db
    rm -f "$DB" "$DB"-*
    step tune-cut $((${TUNE_CUT:-90} + 30)) "timeout -s INT ${TUNE_CUT:-90} \$FCJIT --db \$DB tune; echo \"tune exit \$?\"; \
        \$FCJIT --db \$DB cache export $OUT/results-at-cut.tsv; wc -l $OUT/results-at-cut.tsv"
    step tune-resume 465 "\$FCJIT --db \$DB tune; export_tuning"
    ;;
tuned-bench)   # BENCH.md's sweep: tuned winners vs the heuristic (FC_TUNED=0) vs the peers
    export DB=/tmp/flashcore-gpu-host/tune.db
    [ -f "$DB" ] || "$FCJIT" --db "$DB" cache import "${TUNING_RESULTS:-$OUT/tuning-results.tsv}"
    step explain 60 "\$FCJIT --db \$DB explain --head-dim 128 --seqlen 2048 --causal; \
        \$FCJIT --db \$DB explain --head-dim 64 --seqlen 16384 --dtype bf16"
    step bench 580 "FC_TUNING_DB=\$DB python3 tools/bench.py --untuned --json $OUT/bench-tuned.json"
    ;;
bench)
    step bench 580 "python3 tools/bench.py \${BENCH_ARGS:-} --json \$OUT/bench.json"
    ;;
ab)   # a change that must not move speed: both builds precompiled, then timed in one process
        # ($AB_ARGS: bench.py's row selection, default --no-extra)
    step precompile 200 "\$FCJIT --db \$DB precompile --arch sm_90a && .carry-base/bin/fcjit --db \$DB precompile --arch sm_90a"
    step bench-ab 500 "FC_TUNING_DB=\$DB python3 tools/bench.py ${AB_ARGS:---no-extra} --baseline-lib $PWD/.carry-base/lib/libflashcore.so \
        --json $OUT/bench-ab.json"
    ;;
ab-rounds)   # an A/B that can see 1-3%: alternating rounds (PERF_NOTES v23.7), no peers
    step ab-rounds 580 "FC_TUNING_DB=\$DB python3 tools/ab_rounds.py --baseline-lib $PWD/.carry-base/lib/libflashcore.so \
        ${ABR_ARGS:---labels sweep,gqa} --json $OUT/ab-rounds.json"
    ;;
tune-ab)   # new candidates' winners against the shipped winners, same library, same process, same tensors
    export DB=/tmp/flashcore-gpu-host/tune-ab.db
    rm -rf "$DB" "$DB"-* "$DB".locks /tmp/flashcore-gpu-host/shipped.db*
    step tune 420 "\$FCJIT --db \$DB tune --spec ${TUNE_SPEC:?TUNE_SPEC: a tuning spec} ${TUNE_ARGS:-}; export_tuning"
    step bench-tune-ab 500 "FC_TUNING_DB=\$DB python3 tools/bench.py ${AB_ARGS:---no-extra} \
        --baseline-db /tmp/flashcore-gpu-host/shipped.db --json $OUT/bench-tune-ab.json"
    ;;
merge)   # fc_attention_merge: the package's merge tests, then ring attention simulated on one GPU
    step precompile 200 "\$FCJIT --db \$DB precompile --arch sm_90a"
    step merge-tests 200 "FC_TUNING_DB=\$DB python3 -m pytest -p no:cacheprovider -rs -q tests/python/test_gpu.py -k merge"
    step ring-sim 300 "for c in --causal ''; do FC_TUNING_DB=\$DB python3 tools/ring_attention.py --simulate 4 \
        --seqlen 8192 \$c || exit 1; done; FC_TUNING_DB=\$DB python3 tools/ring_attention.py --simulate 2 \
        --seqlen 65536 --causal --dtype f16"
    ;;
ring)   # context-parallel (ring) attention over every GPU of the host (issue 17): torchrun, one process a
        # GPU, NCCL; each run checks sampled rows against the fp64 reference and times the ring against
        # one GPU on the whole sequence ($RING_SEQLENS tokens, causal; the JSON line is in each log),
        # after the ring simulated on one GPU with 3 and 4 ranks (the layout's arithmetic, checked)
    export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1   # never NVLink multicast
    gpus=$(python3 -c 'import torch; print(torch.cuda.device_count())')
    step topology 30 "nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv; nvidia-smi topo -m"
    step ring-sim 120 "for p in 4 3; do for c in --causal ''; do FC_TUNING_DB=\$DB python3 tools/ring_attention.py \
        --simulate \$p --seqlen 12288 \$c || exit 1; done; done"
    for s in ${RING_SEQLENS:-131072 65536 262144}; do
        step ring-$s ${RING_LIMIT:-150} "FC_TUNING_DB=\$DB python3 -m torch.distributed.run --nproc-per-node $gpus tools/ring_attention.py --seqlen $s --causal"
    done
    ;;
report)   # BENCH.md's sweep with tools/bench.py --report: JSON, plots, report.md, power per result
    step precompile 200 "\$FCJIT --db \$DB precompile --arch sm_90a"
    step report 500 "FC_TUNING_DB=\$DB python3 tools/bench.py --power-seconds \${POWER_SECONDS:-0.3} \
        --report $OUT/report"
    ;;
checks)   # correctness only, so run side by side on the GPU: gpu suite, the package's GPU suite,
          # memcheck on odd shapes; then the CPU pytest suite
    export SANITIZE_DIMS="${SANITIZE_DIMS:-64 128}"
    step gpu-suite 480 .carry/bin/test_gpu &
    step python-gpu 480 "FC_TUNING_DB=\$DB python3 -m pytest -p no:cacheprovider -rs -q tests/python/test_gpu.py" &
    step memcheck 480 "SANITIZE_TOOLS=memcheck sanitize" &
    wait
    step python-cpu 60 "python3 -m pytest -p no:cacheprovider -rs -q tests/python --ignore=tests/python/test_gpu.py"
    ;;
validate)
    step gpu-suite 400 .carry/bin/test_gpu
    step hopper 120 .carry/bin/test_hopper
    step sanitizer 300 sanitize
    step sanitize-decode 120 sanitize_decode
    step check-py 420 python3 tools/check.py --json "$OUT/check.json"
    ;;
final)
    step gpu-suite 400 .carry/bin/test_gpu
    step hopper 120 .carry/bin/test_hopper
    step sanitizer 300 sanitize
    step check-py 420 python3 tools/check.py --json "$OUT/check.json"
    step bench 420 python3 tools/bench.py --json "$OUT/bench.json"
    ;;
*)
    echo "usage: tools/gpu-host.sh check|hopper|tiles|host|first-call|sm90|variants|decode|decode-sweep|decode-quick|masks|tune|tune-resume|tuned-bench|shapes|perf|bench|ab|checks|masks|masks-checks|gpu-suite-split|merge|ring|report|validate|final|python|fp8kv|fp8|quantize" >&2
    exit 2
    ;;
esac
tee "$OUT/summary.txt" < "$OUT/.steps"
rm -f "$OUT/.steps"
