#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
date -u >> $OUT/gpu.txt
timeout 200 python3 tools/check.py --matrix paged --families sm90 --repeats 2 > $OUT/chk-paged.log 2>&1; echo "rc $?" >> $OUT/chk-paged.log
date -u >> $OUT/gpu.txt
