#!/bin/bash
# session 39, call 7 (v39.6): FP8 head_dim 128's two consumers held mid-softmax (HOLD_TILES: a quarter,
# .carry-tpl/h4, or half, .carry-tpl/h2, of the n-tiles' exponentials before the wait for P V(t - 1))
# against this library's own templates (the head's, .carry-t), FP8 head_dim 128 rows in alternation,
# outputs compared bit for bit; then BENCH.md's FP8 base check at head_dim 128 of the quarter form.
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry-t/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
for h in h4 h2; do
  stamp "ab fp8 head_dim 128, $h"
  timeout 90 python3 tools/ab_rounds.py --ours-templates $PWD/.carry-tpl/$h/kernel_templates --baseline-db /tmp/fcdb/b-$h.db --dtypes e4m3 --dims 128 --causal both --seqlens 1024,4096,16384 --rounds 5 --json $OUT/j/ab-$h.json > $OUT/ab-$h.log 2>&1
done
stamp "check fp8 128, h4"
FC_TEMPLATE_DIR=$PWD/.carry-tpl/h4/kernel_templates FC_TUNING_DB=/tmp/fcdb/c.db timeout 60 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 128 --repeats 1 > $OUT/check-fp8-h4.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
