#!/bin/bash
# session 31, call 11 (H100): the final library (its embedded winners: this session's three sets) on a
# fresh database: the kernels the new winners run checked by BENCH.md's rule, each forced, then
# bench.py's sweep and GQA rows
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp checks
timeout 100 python3 tools/check.py --matrix base --head-dims 64 --families sm90:m64n64s2w4 --repeats 2 > $OUT/check-d64-n64.log 2>&1; echo "rc $?" >> $OUT/check-d64-n64.log
timeout 100 python3 tools/check.py --matrix base --head-dims 256 --families sm90:m128n64s2w12p1 --repeats 2 > $OUT/check-d256-n64.log 2>&1; echo "rc $?" >> $OUT/check-d256-n64.log
timeout 100 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 64 --families sm90:m192n128s2w16p0 --repeats 2 > $OUT/check-fp8-d64-m192.log 2>&1; echo "rc $?" >> $OUT/check-fp8-d64-m192.log
stamp bench
timeout 260 python3 tools/bench.py --rounds 3 --labels sweep,gqa --json $OUT/j/bench-r3.json > $OUT/bench-r3.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
