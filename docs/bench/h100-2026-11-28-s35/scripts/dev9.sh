#!/bin/bash
# session 35, call 9 (call 8 again: its pip installed the peers' wheels for another python, so that it timed
# ours alone; and a third stage for the V^T ring, forced, against two): FP8 with V
# transposed ahead against FA3 fp8, cuDNN fp8 and our bf16 (bench_fp8.py, three rounds, head_dim 128 and
# 256, 2k-16k keys, causal and not; timing only, the accuracy runs left out).
export LD_LIBRARY_PATH=$PWD/.carry-lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry-lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
python3 -m pip install --no-index --no-deps .peers/*/*.whl > $OUT/pip.log 2>&1
stamp "bench_fp8 d128,256 2k,4k,16k rounds 3"
timeout 150 python3 tools/bench_fp8.py --dims 128,256 --seqlens 2048,4096,16384 --rounds 3 --no-accuracy --json $OUT/j/bench-fp8.json > $OUT/bench-fp8.log 2>&1
stamp "ab: forced v1 with 3 stages against 2, n128 (both this library)"
timeout 90 python3 tools/ab_rounds.py --baseline-lib $PWD/.carry-lib/libflashcore.so --baseline-db /tmp/fcdb/base.db --ours-variant sm90:m128n128s3w12v1 --baseline-variant sm90:m128n128s2w12v1 --dtypes e4m3 --dims 128,256 --causal both --seqlens 4096,16384 --rounds 5 --json $OUT/j/ab-s3.json > $OUT/ab-s3.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
