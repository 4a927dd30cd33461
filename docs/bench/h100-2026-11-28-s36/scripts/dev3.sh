#!/bin/bash
# session 36, call 3: call 2's nap32 (FP8's producer waits napping 32 ns between tries) again, 7
# alternations, head_dim 128 and 256 from 1k to 16k keys and head_dim 64 from 4k (call 2: 128 1.005-1.017,
# 64 0.971-1.005, 5 alternations).
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "ab nap32 e4m3 d128,256"
timeout 200 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/base-a.db --ours-templates $PWD/.carry-tpl/nap32/kernel_templates --dtypes e4m3 --dims 128,256 --causal both --seqlens 1024,2048,4096,16384 --rounds 7 --json $OUT/j/ab-nap32-a.json > $OUT/ab-nap32-a.log 2>&1
stamp "ab nap32 e4m3 d64"
timeout 100 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/base-b.db --ours-templates $PWD/.carry-tpl/nap32/kernel_templates --dtypes e4m3 --dims 64 --causal both --seqlens 4096,16384 --rounds 7 --json $OUT/j/ab-nap32-b.json > $OUT/ab-nap32-b.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
