#!/bin/bash
# session 35, call 4: the quick first call with its compile alone (the worker held until the quick
# kernel is compiled) and 64-key quick tiles at every head_dim (.carry), against the landed library
# (.carry-base, acdc61c) with its own first_call.py; NVRTC alone on the new quick sources and on
# sm80's head_dim 256 kernel; the quick first call's correctness (check.py, the gpu suite's test).
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/tools
export FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so CUDA_CACHE_DISABLE=1 FC_NVRTC_LIBRARY=/usr/local/cuda/lib64/libnvrtc.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "NVRTC alone on the new quick sources"
timeout 60 python3 tools/compile_time.py --repeats 3 .carry-src/*.cu > $OUT/compile-time.log 2>&1
stamp "first_call.py --rounds 3 (new)"
timeout 150 python3 tools/first_call.py --rounds 3 --json $OUT/j/first-call-new.json > $OUT/first-call-new.log 2>&1
stamp "first_call.py --rounds 3 (landed library, its own script)"
FLASHCORE_LIB=$PWD/.carry-base/libflashcore.so timeout 150 python3 .carry-src/first_call_old.py --rounds 3 --json $OUT/j/first-call-base.json > $OUT/first-call-base.log 2>&1
stamp "check.py --quick-first-call base d64,128,256"
timeout 150 python3 tools/check.py --quick-first-call --matrix base --head-dims 64,128,256 --repeats 1 --json $OUT/j/check-quick.json > $OUT/check-quick.log 2>&1; echo "rc $?" >> $OUT/check-quick.log
stamp "gpu suite: test_quick_first_call"
FC_GPU_TESTS=test_quick_first_call timeout 100 .carry/bin/test_gpu > $OUT/gpu-quick.log 2>&1; echo "rc $?" >> $OUT/gpu-quick.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
