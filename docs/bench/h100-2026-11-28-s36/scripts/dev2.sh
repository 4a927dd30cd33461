#!/bin/bash
# session 36, call 2: fcc7216's library on the GPU (its host change, the V map left for launch to set,
# had not run there) with the gpu suite's graph-capture test, which now also captures FP8 attention with
# V transposed ahead (head_dim 256, 4097 keys; the plan asserted to be a _vt kernel); racecheck and
# synccheck on a selected _vt run (the transposer's first sanitizer runs); the gpu suite's sm90 FP8 test
# given 240 s (its forced v1 pass whole); the package's GPU pytest suite. Then FP8's producer waits
# napping between tries (__nanosleep 32 / 128 ns; .carry-tpl/napN) against the library's own templates.
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
RUN="run --dtype e4m3 --head-dim 256 --batch 1 --heads-q 4 --heads-kv 2 --seqlen-q 200 --seqlen-k 4100 --iters 1 --warmup 0 --seed 7"
stamp "graph capture | sanitizers | python gpu"
(FC_GPU_TESTS=test_forward_is_graph_capturable timeout 120 .carry/bin/test_gpu > $OUT/gpu-graph.log 2>&1; echo "rc $?" >> $OUT/gpu-graph.log
 .carry/bin/fcjit --db /tmp/fcdb/k.db explain --dtype e4m3 --head-dim 256 --batch 1 --heads-q 4 --heads-kv 2 --seqlen-q 200 --seqlen-k 4100 > $OUT/san-explain.log 2>&1
 for tool in racecheck synccheck memcheck; do
   timeout 150 $SAN --tool $tool --error-exitcode 9 .carry/bin/fcjit --db /tmp/fcdb/k.db $RUN > $OUT/san-$tool.log 2>&1; echo "rc $?" >> $OUT/san-$tool.log
 done) &
(mkdir -m 700 -p /tmp/pydb; FC_TUNING_DB=/tmp/pydb/k.db timeout 300 python3 -m pytest -p no:cacheprovider -rs -q tests/python/test_gpu.py > $OUT/python-gpu.log 2>&1; echo "rc $?" >> $OUT/python-gpu.log) &
wait
stamp "gpu suite: sm90 FP8 test (240 s)"
FC_GPU_TESTS=test_fp8_attention_matches_reference_in_the_sm90_kernel timeout 240 .carry/bin/test_gpu > $OUT/gpu-fp8-sm90.log 2>&1; echo "rc $?" >> $OUT/gpu-fp8-sm90.log
for n in 32 128; do
  stamp "ab nap$n e4m3"
  timeout 80 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/base-n$n.db --ours-templates $PWD/.carry-tpl/nap$n/kernel_templates --dtypes e4m3 --dims 64,128 --causal both --seqlens 4096,16384 --rounds 5 --json $OUT/j/ab-nap$n.json > $OUT/ab-nap$n.log 2>&1
done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
