#!/bin/bash
# session 34, call 4 (H100): the final library (0330fc7: the static tail for 16-bit head_dim 128 only;
# every other kernel's SASS main's, offline). The gpu suite's persistent-grid test (its few-SM pass must
# find a tail); the short causal rows against main's library in alternation (head_dim 256's 512-key
# rows lost 3.5% to 3e2bb12's code); then bench.py's sweep and GQA rows against the peers, fresh database
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "precompile"
timeout 100 .carry/bin/fcjit --db /tmp/fcdb/k.db precompile --arch sm_90a > $OUT/precompile.log 2>&1; echo "rc $?" >> $OUT/precompile.log
stamp "gpu suite: persistent grid"
FC_GPU_TESTS='test_sm90_persistent_grid_loops_over_row_blocks' timeout 170 .carry/bin/test_gpu > $OUT/gpu-persistent.log 2>&1; echo "rc $?" >> $OUT/gpu-persistent.log
AB="python3 tools/ab_rounds.py --baseline-lib $PWD/.carry-base/libflashcore.so --baseline-db /tmp/fcdb/base.db"
stamp "ab causal d128/256 512/1k"
timeout 70 $AB --labels sweep --dtypes f16,bf16 --dims 128,256 --causal yes --seqlens 512,1024 --rounds 5 --json $OUT/j/ab-short.json > $OUT/ab-short.log 2>&1
stamp "bench sweep,gqa"
timeout 250 python3 tools/bench.py --rounds 3 --labels sweep,gqa --json $OUT/j/bench-r3.json > $OUT/bench-r3.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
