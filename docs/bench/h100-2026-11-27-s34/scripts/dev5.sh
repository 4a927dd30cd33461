#!/bin/bash
# session 34, call 5 (H100): the final library (0330fc7) against main's (17d7093's, .carry-base) in
# alternation, 9 a row, on every 16-bit head_dim 128 causal row of the sweep and the GQA rows: what
# the static tail moves, the figure for the closing note
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "ab d128 causal sweep+gqa, 9 alternations"
timeout 200 python3 tools/ab_rounds.py --baseline-lib $PWD/.carry-base/libflashcore.so --baseline-db /tmp/fcdb/base.db --labels sweep,gqa --dtypes f16,bf16 --dims 128 --causal yes --rounds 9 --json $OUT/j/ab-final.json > $OUT/ab-final.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
