#!/bin/bash
# session 37, call 8 (v37.3): the row max as a tree (.carry-tpl/tree: this tree's templates, softmax.cuh's
# open_row) against the landed templates (.carry's embedded ones), same library, in alternation: FP8 and
# bf16 at head_dim 64 and 128, 4k and 16k keys, causal or not; outputs compared bit for bit.
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
T=$PWD/.carry-tpl/tree/kernel_templates
stamp "ab tree e4m3 d64,128"
timeout 130 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/b.db --ours-templates $T --dtypes e4m3 --dims 64,128 --causal both --seqlens 4096,16384 --rounds 5 --json $OUT/j/ab-fp8.json > $OUT/ab-fp8.log 2>&1
stamp "ab tree bf16 d64,128"
timeout 110 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/b2.db --ours-templates $T --dtypes bf16 --dims 64,128 --causal both --seqlens 4096,16384 --rounds 5 --json $OUT/j/ab-bf16.json > $OUT/ab-bf16.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
