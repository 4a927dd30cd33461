#!/bin/bash
# session 33, call 3 (H100): the library with head_dim 64 causal grids on the counter and the 2k
# buckets' new winner (two consumers without turns) shipped: 1k and 2k candidates in alternation;
# BENCH.md's rule on the new 2k winner; then bench.py's sweep and GQA rows against the peers on a fresh
# database (the shipped winners)
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "bench sweep,gqa"
timeout 280 python3 tools/bench.py --rounds 3 --labels sweep,gqa --json $OUT/j/bench-r3.json > $OUT/bench-r3.log 2>&1
AB="python3 tools/ab_rounds.py"
stamp "ab d64 causal 1k: ours m128n128s2w12p0, the selection"
FC_TUNING_DB=/tmp/fcdb/ab.db timeout 50 $AB --dtypes f16,bf16 --dims 64 --causal yes --seqlens 1024 --rounds 7 --ours-variant sm90:m128n128s2w12p0 --json $OUT/j/ab-1k.json > $OUT/ab-1k.log 2>&1
stamp "ab d64 causal 2k: ours m128n128s2w12p0 (the selection), baseline m192n128s2w16p1"
FC_TUNING_DB=/tmp/fcdb/ab.db timeout 50 $AB --dtypes f16,bf16 --dims 64 --causal yes --seqlens 2048 --rounds 7 --baseline-variant sm90:m192n128s2w16p1 --json $OUT/j/ab-2k.json > $OUT/ab-2k.log 2>&1
stamp "check d64 m128n128s2w12p0"
timeout 70 python3 tools/check.py --matrix base --head-dims 64 --repeats 2 --families sm90:m128n128s2w12p0 > $OUT/check-d64-m128.log 2>&1; echo "rc $?" >> $OUT/check-d64-m128.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
