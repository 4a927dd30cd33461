#!/bin/bash
# session 34, call 3 (H100): the landed static tail (3e2bb12: T from two candidates, kept per thread;
# call 2's FP8 512-key row lost 3x to the full search's host time, 252 us a plan). The short causal
# rows and FP8 head_dim 256 against main's library in alternation; the gpu suite's persistent-grid
# test again (the tail's count now from two candidates); then bench.py's sweep and GQA rows against
# the peers on a fresh database
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "precompile"
timeout 100 .carry/bin/fcjit --db /tmp/fcdb/k.db precompile --arch sm_90a > $OUT/precompile.log 2>&1; echo "rc $?" >> $OUT/precompile.log
AB="python3 tools/ab_rounds.py --baseline-lib $PWD/.carry-base/libflashcore.so --baseline-db /tmp/fcdb/base.db"
stamp "ab causal d128/256 512/1k"
timeout 80 $AB --labels sweep --dtypes f16,bf16 --dims 128,256 --causal yes --seqlens 512,1024 --rounds 5 --json $OUT/j/ab-short.json > $OUT/ab-short.log 2>&1
stamp "ab e4m3 d256 causal 512-2k"
timeout 50 $AB --dtypes e4m3 --dims 256 --causal yes --seqlens 512,1024,2048 --rounds 5 --json $OUT/j/ab-fp8.json > $OUT/ab-fp8.log 2>&1
stamp "gpu suite: persistent grid"
FC_GPU_TESTS='test_sm90_persistent_grid_loops_over_row_blocks' timeout 150 .carry/bin/test_gpu > $OUT/gpu-persistent.log 2>&1; echo "rc $?" >> $OUT/gpu-persistent.log
stamp "bench sweep,gqa"
timeout 280 python3 tools/bench.py --rounds 3 --labels sweep,gqa --json $OUT/j/bench-r3.json > $OUT/bench-r3.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
