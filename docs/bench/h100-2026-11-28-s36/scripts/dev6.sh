#!/bin/bash
# session 36, call 6: FP8 head_dim 192 with V transposed ahead (forced sm90:v1; v35.3 measured 128 and
# 256 only, and the selector takes it at 256 from 4k keys): BENCH.md's rule on the forced _vt kernels,
# then in alternation against the landed selection (in-kernel transposes), 2k-16k keys.
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "check.py e4m3 d192 forced v1"
timeout 60 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 192 --repeats 2 --families sm90:v1 --json $OUT/j/check-192.json > $OUT/check-192.log 2>&1; echo "rc $?" >> $OUT/check-192.log
stamp "ab d192 v1 vs landed selection"
timeout 150 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/b.db --ours-variant sm90:v1 --dtypes e4m3 --dims 192 --causal both --seqlens 2048,4096,8192,16384 --rounds 7 --json $OUT/j/ab-192.json > $OUT/ab-192.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
