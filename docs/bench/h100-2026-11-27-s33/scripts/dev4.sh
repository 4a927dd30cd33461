#!/bin/bash
# session 33, call 4 (H100): 16-bit head_dim 128 causal grids on the counter too (an experimental
# library, .carry-exp: scheduled() takes K/V rows up to 256 bytes in 16-bit; its consumers then keep
# each block's turns) against the landed library (.carry: head_dim 128 on static pairs, continuous
# turns) in alternation; the head_dim 64 rows (the same kernels in both) the noise floor; then the
# gpu suite's scheduled-grid tests (now 16-bit too) on the landed library
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "ab d128 causal scheduled (exp) vs static (landed)"
FLASHCORE_LIB=$PWD/.carry-exp/libflashcore.so timeout 200 python3 tools/ab_rounds.py --baseline-lib $PWD/.carry/lib/libflashcore.so --baseline-db /tmp/fcdb/base.db --labels sweep,gqa --dtypes f16,bf16 --dims 64,128 --causal yes --seqlens 2048,4096,8192,16384 --rounds 5 --noise-kernels 'd64' --json $OUT/j/ab-d128.json > $OUT/ab-d128.log 2>&1
stamp "gpu suite: scheduled grids"
FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so FC_GPU_TESTS='*scheduled*' timeout 90 .carry/bin/test_gpu > $OUT/gpu-scheduled.log 2>&1; echo "rc $?" >> $OUT/gpu-scheduled.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
