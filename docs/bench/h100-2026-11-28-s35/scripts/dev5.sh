#!/bin/bash
# session 35, call 5: what FP8's in-kernel transpose of V costs (issue 15: "transpose it in shared memory
# in the kernel or take a pre-transposed V - measure and say why"). Timing only, outputs wrong by
# design: the landed library (6f49a67's, .carry) compiling two template folders against its own
# templates, FP8 rows in alternation: notrans = the transposes skipped (the staging ring's waits and
# arrivals kept); direct = V by TMA straight into the V^T slot, producer thread 0 alone (no staging,
# no transposers), the upper bound of a pre-transposed V.
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
for d in direct notrans; do
  stamp "ab e4m3 $d"
  timeout 220 python3 tools/ab_rounds.py --baseline-lib $PWD/.carry/lib/libflashcore.so --baseline-db /tmp/fcdb/base-$d.db --ours-templates $PWD/.carry-tpl/$d --dtypes e4m3 --dims 64,128,256 --causal both --seqlens 4096,16384 --rounds 5 --json $OUT/j/ab-$d.json > $OUT/ab-$d.log 2>&1
done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
