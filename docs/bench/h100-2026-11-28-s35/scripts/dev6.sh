#!/bin/bash
# session 35, call 6: FP8 attention with V transposed ahead (the sm90 module's second kernel writes V^T
# in P's key order to scratch, the attention kernel loads it by TMA; selected from 2k keys at head_dim
# 128 and 256): the gpu suite's sm90 FP8 test (its new forced v1 pass), check.py's FP8 matrix
# (selected: the 4097-key cases take it), then against the landed library (.carry-base) in alternation
# (outputs should be bit for bit), memcheck (bench_fp8.py: call 8).
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "gpu suite: test_fp8_attention_matches_reference_in_the_sm90_kernel"
FC_GPU_TESTS=test_fp8_attention_matches_reference_in_the_sm90_kernel timeout 100 .carry/bin/test_gpu > $OUT/gpu-fp8-sm90.log 2>&1; rc=$?; echo "rc $rc" >> $OUT/gpu-fp8-sm90.log
if [ $rc = 124 ]; then stamp "the gpu test timed out: stop"; cd $OUT && tar czf logs.tgz *.log; exit 0; fi
stamp "check.py e4m3 d128,256"
timeout 70 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 128,256 --repeats 1 --json $OUT/j/check-fp8.json > $OUT/check-fp8.log 2>&1; echo "rc $?" >> $OUT/check-fp8.log
stamp "memcheck: fcjit run e4m3 d128 4100 keys"
timeout 45 compute-sanitizer --tool memcheck --error-exitcode 9 .carry/bin/fcjit --db /tmp/fcdb/k.db run --dtype e4m3 --head-dim 128 --batch 2 --heads-q 8 --heads-kv 2 --seqlen 4100 --causal > $OUT/memcheck.log 2>&1; echo "rc $?" >> $OUT/memcheck.log
stamp "ab e4m3 vs landed"
timeout 150 python3 tools/ab_rounds.py --baseline-lib $PWD/.carry-base/libflashcore.so --baseline-db /tmp/fcdb/base.db --dtypes e4m3 --dims 128,256 --causal both --seqlens 1024,2048,4096,16384 --rounds 5 --json $OUT/j/ab.json > $OUT/ab.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
