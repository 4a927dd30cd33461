#!/bin/bash
# session 36, call 1: a share of the softmax's exponentials on the FMA pipe (exp2_fma) where the SFU's
# exponentials take as long as the tile's GEMMs or longer (FP8 head_dim 64 and 128, 16-bit head_dim 64;
# warp-specialized kernels). The library of fcc7216 (.carry) compiling template folders that move every
# 4th / 8th / 3rd exponential of a thread's row (.carry-tpl/fmaK) against its own templates, in
# alternation; first BENCH.md's correctness rule on fma4.
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
T=$PWD/.carry-tpl
stamp "check.py fma4 e4m3 d64,128"
FC_TEMPLATE_DIR=$T/fma4/kernel_templates FC_TUNING_DB=/tmp/fcdb/c4.db timeout 80 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 64,128 --repeats 1 --json $OUT/j/check-fp8.json > $OUT/check-fp8.log 2>&1; echo "rc $?" >> $OUT/check-fp8.log
stamp "check.py fma4 16-bit d64"
FC_TEMPLATE_DIR=$T/fma4/kernel_templates FC_TUNING_DB=/tmp/fcdb/c4.db timeout 60 python3 tools/check.py --matrix base --head-dims 64 --repeats 1 --json $OUT/j/check-16.json > $OUT/check-16.log 2>&1; echo "rc $?" >> $OUT/check-16.log
for k in 4 8 3; do
  stamp "ab fma$k e4m3"
  timeout 100 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/base-e$k.db --ours-templates $T/fma$k/kernel_templates --dtypes e4m3 --dims 64,128 --causal both --seqlens 1024,4096,16384 --rounds 5 --json $OUT/j/ab-e4m3-fma$k.json > $OUT/ab-e4m3-fma$k.log 2>&1
done
for k in 4 8; do
  stamp "ab fma$k 16-bit d64"
  timeout 100 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/base-h$k.db --ours-templates $T/fma$k/kernel_templates --dtypes f16,bf16 --dims 64 --causal both --seqlens 1024,2048,4096,16384 --rounds 5 --json $OUT/j/ab-16-fma$k.json > $OUT/ab-16-fma$k.log 2>&1
done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
