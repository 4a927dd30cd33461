#!/bin/bash
# session 30, call 10 (H100): bench.py's GQA prefill rows, now both of issue 16's shapes (B4 Hq32 Hkv8 S4096 and
# B1 Hq64 Hkv8 S8192, head_dim 128, causal), bf16 and f16, three rounds, on the final library and its winners
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
date -u +"%H:%M:%S bench-gqa" >> $OUT/gpu.txt
timeout 300 python3 tools/bench.py --labels gqa --rounds 5 --json $OUT/bench-gqa.json > $OUT/bench-gqa.log 2>&1
date -u +"%H:%M:%S end" >> $OUT/gpu.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
