#!/bin/bash
# session 36, call 7: the final library (49959c0: FP8 head_dim 192 takes V^T ahead from 4k keys, 8k
# causal): what the selector picks and why (fcjit explain), BENCH.md's rule on check.py's FP8 matrix at
# head_dim 192 and 256 as selected (its 4097-key cases without a mask take _vt at both), memcheck on a
# selected head_dim 192 _vt run, the gpu suite's graph-capture test.
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "explain"
for c in "" --causal; do for s in 4096 8192; do
  .carry/bin/fcjit --db /tmp/fcdb/k.db explain --dtype e4m3 --head-dim 192 --batch 1 --heads-q 10 --heads-kv 10 --seqlen $s $c >> $OUT/explain.log 2>&1
done; done
stamp "check.py e4m3 d192,256 selected"
timeout 90 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 192,256 --repeats 2 --json $OUT/j/check.json > $OUT/check.log 2>&1; echo "rc $?" >> $OUT/check.log
stamp "memcheck d192 vt selected"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 60 $SAN --tool memcheck --error-exitcode 9 .carry/bin/fcjit --db /tmp/fcdb/k.db run --dtype e4m3 --head-dim 192 --batch 2 --heads-q 8 --heads-kv 2 --seqlen 4100 --iters 1 --warmup 0 --seed 7 > $OUT/memcheck.log 2>&1; echo "rc $?" >> $OUT/memcheck.log
stamp "gpu suite graph capture"
FC_GPU_TESTS=test_forward_is_graph_capturable timeout 120 .carry/bin/test_gpu > $OUT/gpu-graph.log 2>&1; echo "rc $?" >> $OUT/gpu-graph.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
