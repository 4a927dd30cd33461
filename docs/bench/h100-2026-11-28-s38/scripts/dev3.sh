#!/bin/bash
# session 38, call 3 (v38.3): only consumer 0 of a turn waits for the tile's K and V (.carry-n: the
# library built with this tree's templates) against the landed library (.carry-s), in alternation on the
# same tensors (each row's two outputs compared bit for bit): the 16-bit sweep and GQA rows, FP8 at 4k and
# 16k keys. BENCH.md's checks follow in call 4 (dev4.sh).
export LD_LIBRARY_PATH=$PWD/.carry-n/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry-n/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "ab 16-bit sweep,gqa"
timeout 330 python3 tools/ab_rounds.py --baseline-lib $PWD/.carry-s/lib/libflashcore.so --baseline-db /tmp/fcdb/b1.db --labels sweep,gqa --dtypes bf16,f16 --rounds 5 --json $OUT/j/ab-16.json > $OUT/ab-16.log 2>&1
stamp "ab fp8"
timeout 150 python3 tools/ab_rounds.py --baseline-lib $PWD/.carry-s/lib/libflashcore.so --baseline-db /tmp/fcdb/b2.db --dtypes e4m3 --dims 64,128,256 --causal both --seqlens 4096,16384 --rounds 5 --json $OUT/j/ab-fp8.json > $OUT/ab-fp8.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
