#!/bin/bash
# session 33, call 8 (H100): .carry-exp2 (counter-d128-hold.patch: 16-bit head_dim 128 causal grids on
# the counter, with continuous turns and the consumers' hold keeping the wait for P V(t - 1) after
# a quarter of the exponentials, where run7 found it moved before them) against the landed library
# in alternation; the three-consumer head_dim 64 rows (the same code in both) the noise floor; then
# BENCH.md's rule on .carry-exp2 at head_dim 128
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "ab exp2 vs landed"
FLASHCORE_LIB=$PWD/.carry-exp2/libflashcore.so timeout 220 python3 tools/ab_rounds.py --baseline-lib $PWD/.carry/lib/libflashcore.so --baseline-db /tmp/fcdb/base.db --labels sweep,gqa --dtypes f16,bf16 --dims 64,128 --causal yes --seqlens 2048,4096,8192,16384 --rounds 5 --noise-kernels 'd64_causal_m192' --json $OUT/j/ab-exp2.json > $OUT/ab-exp2.log 2>&1
stamp "check exp2 d128"
FLASHCORE_LIB=$PWD/.carry-exp2/libflashcore.so timeout 90 python3 tools/check.py --matrix base --head-dims 128 --repeats 2 > $OUT/check-exp2-d128.log 2>&1; echo "rc $?" >> $OUT/check-exp2-d128.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
