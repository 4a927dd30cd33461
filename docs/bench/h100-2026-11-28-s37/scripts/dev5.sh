#!/bin/bash
# session 37, call 5: the quick form forced on check.py's varlen matrix (ragged batches, seqused_k, a CUDA
# graph), which run4's --quick-first-call check could not take; the final library (.carry, ac0b97f).
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/tools
export FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "check.py --matrix varlen, forced quick form"
timeout 200 python3 tools/check.py --matrix varlen --repeats 1 --families sm90:m64n32s2w4p0g0q1 --json $OUT/j/check-forced-varlen.json > $OUT/check-forced-varlen.log 2>&1; echo "rc $?" >> $OUT/check-forced-varlen.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
