#!/bin/bash
# session 31, call 5 (H100): the final library (its embedded winners: FP8 head_dim 64 causal 2k on three
# consumers, bf16 head_dim 256 causal 1k on 64-key tiles) on a fresh database: bench.py's sweep and GQA
# rows, bench_fp8.py, and the 64-key head_dim 256 kernels checked
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp bench
timeout 260 python3 tools/bench.py --rounds 3 --labels sweep,gqa --json $OUT/j/bench-r3.json > $OUT/bench-r3.log 2>&1
stamp bench-fp8
timeout 130 python3 tools/bench_fp8.py --dims 64,128,256 --seqlens 1024,2048,4096,16384 --rounds 3 --no-accuracy --json $OUT/j/bench-fp8.json > $OUT/bench-fp8.log 2>&1
stamp check-n64
FC_FORCE_VARIANT=sm90:m128n64s2w12p1 timeout 100 python3 tools/check.py --matrix base --head-dims 256 --repeats 2 > $OUT/check-d256-n64.log 2>&1; echo "rc $?" >> $OUT/check-d256-n64.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
