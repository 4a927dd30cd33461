#!/bin/bash
# session 31, call 7 (H100): energy per call, ours against FA3 (scripts/power_pair.py), on main's kernels
# and on v30.4's sleep.patch (the FP8 producer's waits suspending: .carry-tpl/sleep)
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
P=docs/bench/h100-2026-11-27-s31/scripts/power_pair.py
stamp main
timeout 200 python3 $P > $OUT/power-main.log 2>&1
stamp sleep
FC_TEMPLATE_DIR=$PWD/.carry-tpl/sleep timeout 200 python3 $P > $OUT/power-sleep.log 2>&1
stamp end
