#!/bin/bash
# session 34, call 2 (H100): the static tail again, with more alternations (9) on the head_dim 128 and
# 256 causal rows and the GQA rows; FP8 head_dim 256 causal (its kernel spills 48 bytes where it spilled
# 44); bench.py's GQA rows against the peers (the new library); then the gpu suite's persistent-grid
# test, which call 1 cut off at 100 s (8 of 10 forced schedules passed)
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "precompile"
timeout 100 .carry/bin/fcjit --db /tmp/fcdb/k.db precompile --arch sm_90a > $OUT/precompile.log 2>&1; echo "rc $?" >> $OUT/precompile.log
AB="python3 tools/ab_rounds.py --baseline-lib $PWD/.carry-base/libflashcore.so --baseline-db /tmp/fcdb/base.db"
stamp "ab causal d128/256 sweep+gqa, 9 alternations"
timeout 200 $AB --labels sweep,gqa --dtypes f16,bf16 --dims 128,256 --causal yes --seqlens 2048,4096,8192,16384 --rounds 9 --json $OUT/j/ab9.json > $OUT/ab9.log 2>&1
stamp "ab e4m3 d256 causal"
timeout 60 $AB --dtypes e4m3 --dims 256 --causal yes --rounds 5 --json $OUT/j/ab-fp8.json > $OUT/ab-fp8.log 2>&1
stamp "bench gqa"
timeout 70 python3 tools/bench.py --rounds 3 --labels gqa --json $OUT/j/bench-gqa.json > $OUT/bench-gqa.log 2>&1
stamp "gpu suite: persistent grid"
FC_GPU_TESTS='test_sm90_persistent_grid_loops_over_row_blocks' timeout 200 .carry/bin/test_gpu > $OUT/gpu-persistent.log 2>&1; echo "rc $?" >> $OUT/gpu-persistent.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
