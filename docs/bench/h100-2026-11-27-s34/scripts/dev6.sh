#!/bin/bash
# session 34, call 6 (H100): the final library (c3f3644) on the GPU once more: compute-sanitizer memcheck
# and racecheck on a 16-bit head_dim 128 causal grid with a static tail (B2 H16 S2048: 16 heads in the
# tail on 132 CTAs); beside them the gpu suite's selected-kernels, bit-identical and graph-capture tests
# and the package's GPU pytest suite
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
stamp "precompile"
timeout 100 .carry/bin/fcjit --db /tmp/fcdb/k.db precompile --arch sm_90a > $OUT/precompile.log 2>&1; echo "rc $?" >> $OUT/precompile.log
stamp "sanitizers | gpu suite tests | python gpu"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
(.carry/bin/fcjit --db /tmp/fcdb/k.db explain --batch 2 --heads 16 --seqlen 2048 --head-dim 128 --causal --dtype bf16 > $OUT/san-explain.log 2>&1
 for tool in memcheck racecheck; do
   timeout 100 $SAN --tool $tool --error-exitcode 9 .carry/bin/fcjit --db /tmp/fcdb/k.db run --batch 2 --heads 16 --seqlen 2048 --head-dim 128 --causal --dtype bf16 --iters 1 --warmup 0 --seed 7 > $OUT/san-$tool.log 2>&1; echo "rc $?" >> $OUT/san-$tool.log
 done) &
(for t in test_selected_kernels_match_reference_over_awkward_shapes test_bit_identical_over_repeated_runs test_forward_is_graph_capturable; do
   FC_GPU_TESTS=$t timeout 150 .carry/bin/test_gpu > $OUT/gpu-$t.log 2>&1; echo "rc $?" >> $OUT/gpu-$t.log
 done) &
(mkdir -m 700 -p /tmp/pydb; FC_TUNING_DB=/tmp/pydb/k.db timeout 250 python3 -m pytest -p no:cacheprovider -rs -q tests/python/test_gpu.py > $OUT/python-gpu.log 2>&1; echo "rc $?" >> $OUT/python-gpu.log) &
wait
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs && rm -rf logs
