#!/bin/bash
# session 37, call 6: the final library's first calls on whatever host this call gets (a second reading
# of issue 16's cold-compile bar beside run3's): NVRTC alone on the old and new quick sources (the host's
# speed against run2's), then first_call.py --rounds 4 (the new library only).
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/tools
export FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so CUDA_CACHE_DISABLE=1 FC_NVRTC_LIBRARY=/usr/local/cuda/lib64/libnvrtc.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
lscpu | grep -E "Model name|^CPU\(s\)|MHz" >> $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "NVRTC alone: old and new quick sources"
timeout 40 python3 tools/compile_time.py --repeats 3 .carry-src/old/*.cu > $OUT/compile-time-old.log 2>&1
timeout 40 python3 tools/compile_time.py --repeats 3 .carry-src/new/*.cu > $OUT/compile-time-new.log 2>&1
stamp "first_call.py --rounds 4 (new)"
timeout 200 python3 tools/first_call.py --rounds 4 --json $OUT/j/first-call-new.json > $OUT/first-call-new.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
