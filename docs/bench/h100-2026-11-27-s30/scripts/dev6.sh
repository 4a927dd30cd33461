#!/bin/bash
# session 30, call 6 (H100): the final library's FP8 head_dim 256 kernels: racecheck, synccheck and memcheck on
# fcjit run (persistent, causal and not; GQA), the gpu suite's FP8 attention tests, check.py's FP8 varlen
# and features (windows, softcaps: kernels the change leaves as they were)
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
FCJIT=$PWD/.carry/bin/fcjit
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
stamp sanitize
for tool in racecheck synccheck memcheck; do for c in "" --causal; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $FCJIT --no-cache run --batch 2 --heads-q 8 --heads-kv 2 --seqlen 2000 \
    --head-dim 256 --dtype e4m3 $c --iters 1 --warmup 0 --check-rows 8 > /tmp/s.log 2>&1
  echo "$tool d256 e4m3 ${c:-full}: exit $? $(grep -E 'SUMMARY' /tmp/s.log | tr -s ' ') $(grep -o 'sm90_[a-z0-9_]*' /tmp/s.log | head -1)" >> $OUT/sanitize.log
done; done
stamp gpu-suite
FC_GPU_TESTS='test_fp8_attention*' timeout 200 .carry/bin/test_gpu > $OUT/gpu-suite-fp8.log 2>&1; echo "exit $?" >> $OUT/gpu-suite-fp8.log
stamp check
timeout 120 python3 tools/check.py --matrix varlen --dtype e4m3 --head-dims 128,256 --families sm90 --repeats 2 > $OUT/check-fp8-varlen.log 2>&1
timeout 150 python3 tools/check.py --matrix features --dtype e4m3 --head-dims 256 --families sm90 --repeats 2 > $OUT/check-fp8-features.log 2>&1
stamp end
