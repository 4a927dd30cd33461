#!/bin/bash
# session 38, call 5 (after dev5.sh's A/B; v38.3): BENCH.md's checks of the library with consumer 0 alone waiting for a turn's
# data (.carry-a): the base matrix at head_dim 64 / 96 / 128 / 256 on the selection and with the turns
# schedules forced, FP8, varlen, paged and features matrices; compute-sanitizer racecheck and synccheck
# on two turns kernels (GQA 4, causal).
export LD_LIBRARY_PATH=$PWD/.carry-a/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry-a/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
stamp "check base (selection)"
timeout 150 python3 tools/check.py --matrix base --head-dims 64,96,128,256 --repeats 2 > $OUT/check-base.log 2>&1
stamp "check base, turns forced"
timeout 120 python3 tools/check.py --matrix base --head-dims 64 --repeats 2 --families sm90:m192n128s2w16p1 > $OUT/check-d64-turns.log 2>&1
timeout 120 python3 tools/check.py --matrix base --head-dims 128 --repeats 2 --families sm90:m128n128s2w12p1 > $OUT/check-d128-turns.log 2>&1
stamp "check fp8, varlen, paged, features"
timeout 120 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 64,128,256 --repeats 2 > $OUT/check-fp8.log 2>&1
timeout 120 python3 tools/check.py --matrix varlen --head-dims 64,128 --repeats 2 > $OUT/check-varlen.log 2>&1
timeout 120 python3 tools/check.py --matrix paged --head-dims 128 --repeats 2 > $OUT/check-paged.log 2>&1
timeout 120 python3 tools/check.py --matrix features --head-dims 128 --repeats 2 > $OUT/check-features.log 2>&1
stamp "sanitizers"
for tool in racecheck synccheck; do
  for v in "sm90:m128n128s2w12p1 --head-dim 128 --causal" "sm90:m192n128s2w16p1 --head-dim 64 --causal"; do
    set -- $v
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 .carry-a/bin/fcjit --no-cache run --variant $1 --batch 1 --heads-q 4 --heads-kv 1 --seqlen-q 400 --seqlen-k 400 "${@:2}" --dtype bf16 --iters 1 --warmup 0 --check-rows 8 > /tmp/san.log 2>&1
    echo "$tool $v: exit $? $(grep SUMMARY /tmp/san.log)" >> $OUT/sanitize.log
  done
done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs && rm -rf logs
