#!/bin/bash
# session 34, call 1 (H100): the static tail (causal persistent grids not on the counter deal their
# last heads' blocks one a unit, heaviest first). Correctness of the changed kernels first (check.py
# on head_dim 96/128/256 and FP8 256, the gpu suite's persistent-grid test with its new few-SM pass),
# then the new library (.carry) against main's (.carry-base) in alternation on the causal sweep and
# GQA rows; head_dim 64 (on the counter: its kernels' key loops unchanged) the noise floor.
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "precompile"
timeout 120 .carry/bin/fcjit --db /tmp/fcdb/k.db precompile --arch sm_90a > $OUT/precompile.log 2>&1; echo "rc $?" >> $OUT/precompile.log
stamp "check.py base d96,128,256 (the static tail's kernels, selected)"
timeout 100 python3 tools/check.py --matrix base --head-dims 96,128,256 --repeats 2 --json $OUT/j/check-base.json > $OUT/check-base.log 2>&1; echo "rc $?" >> $OUT/check-base.log
stamp "ab causal d64/128/256 sweep+gqa"
timeout 290 python3 tools/ab_rounds.py --baseline-lib $PWD/.carry-base/libflashcore.so --baseline-db /tmp/fcdb/base.db --labels sweep,gqa --dtypes f16,bf16 --dims 64,128,256 --causal yes --seqlens 2048,4096,8192,16384 --rounds 5 --noise-kernels 'd64' --json $OUT/j/ab.json > $OUT/ab.log 2>&1
stamp "gpu suite: persistent grid"
FC_GPU_TESTS='test_sm90_persistent_grid_loops_over_row_blocks' timeout 100 .carry/bin/test_gpu > $OUT/gpu-persistent.log 2>&1; echo "rc $?" >> $OUT/gpu-persistent.log
stamp "check.py e4m3 d256"
timeout 50 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 256 --repeats 2 > $OUT/check-fp8.log 2>&1; echo "rc $?" >> $OUT/check-fp8.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
