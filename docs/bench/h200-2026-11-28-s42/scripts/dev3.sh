#!/bin/bash
# session 42, call 3 (H200): the final library (.carry-t: split-KV on the GQA-packed rows, the selector
# giving every packed problem to them, the precompile spec's packed tiles), .peers/fa3:
#   1. err_d256.py: which kernel read run1's err/allowed 1.039 (first_call.py's head_dim 256 row)
#   2. bench.py --rounds 3, every row (sweep, GQA, small, decode, few query rows) against SDPA flash,
#      cuDNN (SDPA's backend) and FA3, a fresh database, the shipped winners
#   3. the gpu suite's decode, varlen, paged and FP8-KV tests (the decode family's launch now src/split.c's)
#   4. check.py's features matrix at head_dim 64 and 256, the selector's choice (sinks, windows, softcaps
#      on split packed rows)
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry-t/lib/libflashcore.so PYTHONPATH=$PWD/python:$PWD/tools FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb*; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version,memory.total --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "err_d256"
timeout 60 python3 docs/bench/h200-2026-11-28-s42/scripts/err_d256.py > $OUT/err-d256.log 2>&1; echo "rc $?" >> $OUT/err-d256.log
stamp "bench (all rows)"
timeout 280 python3 tools/bench.py --rounds 3 --json $OUT/j/bench.json > $OUT/bench.log 2>&1; echo "rc $?" >> $OUT/bench.log
stamp "gpu suite"
for t in test_decode_kernel_matches_reference_over_awkward_shapes test_fp8_kv_matches_reference_in_the_decode_kernel test_varlen_matches_reference_in_every_family test_paged_matches_reference_in_every_family; do
  [ $SECONDS -lt 540 ] || break
  FC_SOURCE_ROOT=$PWD FC_GPU_TESTS=$t timeout $(( 560 - SECONDS )) .carry-t/bin/test_gpu > $OUT/gpu-$t.log 2>&1; echo "rc $?" >> $OUT/gpu-$t.log
done
if [ $SECONDS -lt 550 ]; then
  stamp "check features 64,256"
  timeout $(( 590 - SECONDS )) python3 tools/check.py --matrix features --head-dims 64,256 --repeats 3 --json $OUT/j/check.json > $OUT/check.log 2>&1; echo "rc $?" >> $OUT/check.log
fi
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
