#!/bin/bash
# session 37, call 3 (v37.2): run2's first calls read +-30% between rows of the same kernels, so here
# the two libraries alternate by process: first_call.py --rounds 1, new (.carry, the quick form) and
# landed (.carry-base with its own script) in turn, four times each.
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/tools
export FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so CUDA_CACHE_DISABLE=1 FC_NVRTC_LIBRARY=/usr/local/cuda/lib64/libnvrtc.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
lscpu | grep -E "Model name|^CPU\(s\)" >> $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
for r in 1 2 3 4; do
  stamp "round $r: new"
  timeout 60 python3 tools/first_call.py --rounds 1 --json $OUT/j/new-$r.json >> $OUT/first-call-new.log 2>&1
  stamp "round $r: landed"
  FLASHCORE_LIB=$PWD/.carry-base/libflashcore.so LD_LIBRARY_PATH=$PWD/.carry-base:$PWD/.carry/lib:/usr/local/cuda/lib64 timeout 60 python3 .carry-src/first_call_old.py --rounds 1 --json $OUT/j/base-$r.json >> $OUT/first-call-base.log 2>&1
done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
