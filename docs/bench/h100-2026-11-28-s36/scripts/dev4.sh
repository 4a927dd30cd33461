#!/bin/bash
# session 36, call 4: FP8's P in two register sets taking turns (P(t) into the set P V(t - 1) does not
# read; p-double.patch, .carry-tpl/pd: v31.4's form with the last tile's set taken by a branch, so that
# every index is a constant). Offline: head_dim 128 128-key tiles 0 bytes spilled, ptxas's wait for
# P V(t - 1) after ~10-20 of the 64 exponentials instead of before them. First BENCH.md's rule on the
# forced 128-key tiles, then in alternation: (1) both sides forced to m128n128 (the change alone),
# (2) ours forced to m128n128 against the landed selection (n224 / n192 without a mask), (3) head_dim 64
# forced to m192n128 against the landed selection (n160).
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
PD=$PWD/.carry-tpl/pd/kernel_templates
stamp "check.py pd e4m3 d128 forced m128n128, d64 forced m192n128"
FC_TEMPLATE_DIR=$PD FC_TUNING_DB=/tmp/fcdb/c.db timeout 60 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 128 --repeats 2 --families sm90:m128n128s2w12p1 --json $OUT/j/check-128.json > $OUT/check-128.log 2>&1; echo "rc $?" >> $OUT/check-128.log
FC_TEMPLATE_DIR=$PD FC_TUNING_DB=/tmp/fcdb/c.db timeout 60 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 64 --repeats 2 --families sm90:m192n128s2w16p1 --json $OUT/j/check-64.json > $OUT/check-64.log 2>&1; echo "rc $?" >> $OUT/check-64.log
stamp "ab 1: d128 both m128n128"
timeout 100 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/b1.db --ours-templates $PD --ours-variant sm90:m128n128s2w12p1 --baseline-variant sm90:m128n128s2w12p1 --dtypes e4m3 --dims 128 --causal both --seqlens 1024,2048,4096,16384 --rounds 7 --json $OUT/j/ab1.json > $OUT/ab1.log 2>&1
stamp "ab 2: d128 ours m128n128 vs landed selection"
timeout 100 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/b2.db --ours-templates $PD --ours-variant sm90:m128n128s2w12p1 --dtypes e4m3 --dims 128 --causal both --seqlens 1024,2048,4096,16384 --rounds 7 --json $OUT/j/ab2.json > $OUT/ab2.log 2>&1
stamp "ab 3: d64 ours m192n128 vs landed selection"
timeout 100 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/b3.db --ours-templates $PD --ours-variant sm90:m192n128s2w16p1 --dtypes e4m3 --dims 64 --causal both --seqlens 4096,16384 --rounds 7 --json $OUT/j/ab3.json > $OUT/ab3.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
