#!/bin/bash
# session 30, call 8 (H100): the FP8 standing on the final library, each row's calls timed three times in turn
# (bench_fp8.py's new --rounds)
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
date -u +"%H:%M:%S bench-fp8" >> $OUT/gpu.txt
timeout 500 python3 tools/bench_fp8.py --dims 64,128,256 --seqlens 1024,4096,16384 --rounds 3 --no-accuracy --json $OUT/bench-fp8-r3.json > $OUT/bench-fp8-r3.log 2>&1
date -u +"%H:%M:%S end" >> $OUT/gpu.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
