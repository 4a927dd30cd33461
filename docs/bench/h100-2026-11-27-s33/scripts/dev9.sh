#!/bin/bash
# session 33, call 9 (H100): .carry-exp3 (counter-d128-psets.patch: 16-bit head_dim 128 causal grids on
# the counter, with P in two register sets taking turns (two-consumer scheduled kernels), so that the wait for P V(t - 1) need not precede
# the conversions that ptxas interleaves with the exponentials) against the landed library
# in alternation; the three-consumer head_dim 64 rows (the same code in both; the 2k winner has two consumers: changed) the noise floor; then
# BENCH.md's rule on .carry-exp3 at head_dim 64 and 128
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "ab exp3 vs landed"
FLASHCORE_LIB=$PWD/.carry-exp3/libflashcore.so timeout 220 python3 tools/ab_rounds.py --baseline-lib $PWD/.carry/lib/libflashcore.so --baseline-db /tmp/fcdb/base.db --labels sweep,gqa --dtypes f16,bf16 --dims 64,128 --causal yes --seqlens 2048,4096,8192,16384 --rounds 5 --noise-kernels 'd64_causal_m192' --json $OUT/j/ab-exp3.json > $OUT/ab-exp3.log 2>&1
stamp "check exp3 d64,128"
FLASHCORE_LIB=$PWD/.carry-exp3/libflashcore.so timeout 150 python3 tools/check.py --matrix base --head-dims 64,128 --repeats 2 > $OUT/check-exp3.log 2>&1; echo "rc $?" >> $OUT/check-exp3.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
