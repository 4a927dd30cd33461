#!/bin/bash
# session 30, call 7 (H100): the quick first call's kernel compiled with --Ofast-compile=mid (this tree) against
# the old quick kernel (.carry-base: HEAD df68a42's library, its first_call.py); then the quick path's checks
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db CUDA_CACHE_DISABLE=1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
lscpu | grep -E 'Model name|^CPU\(s\)' >> $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
stamp new1;  timeout 150 python3 tools/first_call.py --rounds 2 --json $OUT/first-call-new1.json > $OUT/first-call-new1.log 2>&1
stamp base1; FLASHCORE_LIB=$PWD/.carry-base/libflashcore.so timeout 150 python3 tools/first_call_base.py --rounds 2 --json $OUT/first-call-base1.json > $OUT/first-call-base1.log 2>&1
stamp new2;  timeout 150 python3 tools/first_call.py --rounds 2 --json $OUT/first-call-new2.json > $OUT/first-call-new2.log 2>&1
stamp gpu-suite; FC_GPU_TESTS=test_quick_first_call timeout 100 .carry/bin/test_gpu > $OUT/gpu-suite-quick.log 2>&1; echo "exit $?" >> $OUT/gpu-suite-quick.log
stamp check; timeout 120 python3 tools/check.py --quick-first-call --matrix base --head-dims 128,256 --repeats 1 > $OUT/check-quick.log 2>&1
stamp end
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
