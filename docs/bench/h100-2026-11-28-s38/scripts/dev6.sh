#!/bin/bash
# session 38, call 6 (v38.3, the landed form): TURN_WAITS on two consumers taking turns only (.carry-c:
# this tree's library; every other kernel's SASS is the landed library's) against the landed library
# (.carry-s) in alternation: 16-bit head_dim 128 and 256 sweep rows and the GQA rows, FP8 head_dim 128 and
# 256 at 4k and 16k keys; BENCH.md's checks of the changed kernels (base, FP8, varlen, paged, features),
# compute-sanitizer racecheck and synccheck on the GQA turns kernel; bench.py's GQA rows against the peers.
export LD_LIBRARY_PATH=$PWD/.carry-c/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry-c/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/fa3/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
B=$PWD/.carry-s/lib/libflashcore.so
stamp "ab 16-bit d128,256 sweep,gqa"
timeout 240 python3 tools/ab_rounds.py --baseline-lib $B --baseline-db /tmp/fcdb/b1.db --labels sweep,gqa --dtypes bf16,f16 --dims 128,256 --rounds 5 --json $OUT/j/ab-16.json > $OUT/ab-16.log 2>&1
stamp "ab fp8 d128,256"
timeout 90 python3 tools/ab_rounds.py --baseline-lib $B --baseline-db /tmp/fcdb/b2.db --dtypes e4m3 --dims 128,256 --causal both --seqlens 4096,16384 --rounds 5 --json $OUT/j/ab-fp8.json > $OUT/ab-fp8.log 2>&1
stamp "checks"
timeout 100 python3 tools/check.py --matrix base --head-dims 128,256 --repeats 2 > $OUT/check-base.log 2>&1
timeout 60 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 128,256 --repeats 2 > $OUT/check-fp8.log 2>&1
timeout 40 python3 tools/check.py --matrix varlen --head-dims 128 --repeats 2 > $OUT/check-varlen.log 2>&1
timeout 40 python3 tools/check.py --matrix paged --head-dims 128 --repeats 2 > $OUT/check-paged.log 2>&1
timeout 50 python3 tools/check.py --matrix features --head-dims 128,256 --repeats 2 > $OUT/check-features.log 2>&1
stamp "sanitizers"
for tool in racecheck synccheck; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 .carry-c/bin/fcjit --no-cache run --variant sm90:m128n128s2w12p1 --batch 1 --heads-q 4 --heads-kv 1 --seqlen-q 400 --seqlen-k 400 --head-dim 128 --causal --dtype bf16 --iters 1 --warmup 0 --check-rows 8 > /tmp/san.log 2>&1
    echo "$tool sm90:m128n128s2w12p1 d128 causal B1 Hq4 Hkv1 S400: exit $? $(grep SUMMARY /tmp/san.log)" >> $OUT/sanitize.log
done
stamp "bench gqa"
timeout 80 python3 tools/bench.py --rounds 3 --labels gqa --json $OUT/j/bench-gqa.json > $OUT/bench-gqa.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
