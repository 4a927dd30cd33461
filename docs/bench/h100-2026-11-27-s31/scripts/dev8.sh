#!/bin/bash
# session 31, call 8 (H100): one call's time four ways, ours against FA3 (scripts/timing_modes.py)
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
date -u +"%H:%M:%S start" >> $OUT/gpu.txt
timeout 250 python3 docs/bench/h100-2026-11-27-s31/scripts/timing_modes.py > $OUT/timing-modes.log 2>&1
date -u +"%H:%M:%S end" >> $OUT/gpu.txt
