#!/bin/bash
# session 35, call 10: the final library (8be1944: the transposer's line offsets in 64 bits, the rule
# at head_dim 256 from 4k keys): check.py's FP8 matrix at head_dim 256 (its 4097-key cases take V^T
# ahead), the gpu suite's sm90 FP8 test (its forced v1 pass) and memcheck on a selected head_dim 256 run.
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "check.py e4m3 d256"
timeout 50 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 256 --repeats 1 --json $OUT/j/check-fp8.json > $OUT/check-fp8.log 2>&1; echo "rc $?" >> $OUT/check-fp8.log
stamp "memcheck: fcjit run e4m3 d256 4100 keys (selected)"
timeout 40 compute-sanitizer --tool memcheck --error-exitcode 9 .carry/bin/fcjit --db /tmp/fcdb/k.db run --dtype e4m3 --head-dim 256 --batch 2 --heads-q 8 --heads-kv 2 --seqlen 4100 > $OUT/memcheck.log 2>&1; echo "rc $?" >> $OUT/memcheck.log
stamp "gpu suite: sm90 FP8 test"
FC_GPU_TESTS=test_fp8_attention_matches_reference_in_the_sm90_kernel timeout 110 .carry/bin/test_gpu > $OUT/gpu-fp8-sm90.log 2>&1; echo "rc $?" >> $OUT/gpu-fp8-sm90.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
