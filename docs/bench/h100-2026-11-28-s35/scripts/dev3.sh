#!/bin/bash
# session 35, call 3: where a cold first call's time goes on the device host (issue 16's cold-compile
# bar): NVRTC alone on the quick and planned kernels' sources (dumped here by FC_DUMP_SOURCE, carried
# as .carry-src), alone and side by side; each phase of a first call on a fresh context, quick first
# call on and off (.carry-src/phases.py); tools/first_call.py as v30.9 ran it. The landed library (acdc61c).
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python
export FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so CUDA_CACHE_DISABLE=1 FC_NVRTC_LIBRARY=/usr/local/cuda/lib64/libnvrtc.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
lscpu | grep -i "model name\|^CPU(s)\|MHz" >> $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "NVRTC alone (compile_time.py, conc.py)"
timeout 100 python3 tools/compile_time.py --repeats 3 .carry-src/*.cu > $OUT/compile-time.log 2>&1
timeout 100 python3 .carry-src/conc.py > $OUT/conc.log 2>&1
stamp "phases.py"
timeout 150 python3 .carry-src/phases.py > $OUT/phases.log 2> $OUT/phases-debug.log
stamp "first_call.py --rounds 3"
timeout 200 python3 tools/first_call.py --rounds 3 --json $OUT/j/first-call.json > $OUT/first-call.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
