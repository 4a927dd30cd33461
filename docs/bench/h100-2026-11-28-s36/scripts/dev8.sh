#!/bin/bash
# session 36, call 8: FP8 head_dim 192 (the final library, 49959c0: V^T ahead from 4k keys, 8k causal)
# against FA3 fp8, cuDNN fp8 and our bf16, with the accuracy columns (bench_fp8.py now takes head_dim
# 192 as bench.py does: heads = 2048 // 192 = 10), three rounds.
export LD_LIBRARY_PATH=$PWD/.carry-lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry-lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
python3 -m pip install --no-index --no-deps .peers/*/*.whl > $OUT/pip.log 2>&1
stamp "bench_fp8 d192 2k-16k rounds 3"
timeout 240 python3 tools/bench_fp8.py --dims 192 --seqlens 2048,4096,8192,16384 --rounds 3 --json $OUT/j/bench-fp8.json > $OUT/bench-fp8.log 2>&1; echo "rc $?" >> $OUT/bench-fp8.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
