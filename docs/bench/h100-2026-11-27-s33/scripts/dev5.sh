#!/bin/bash
# session 33, call 5 (H100): on the landed library (head_dim 64 causal grids on the counter), the 4k-16k
# causal buckets' candidates in alternation against the selection (three consumers taking turns): two
# consumers without turns (the new 2k winner) and three without turns
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
for v in m128n128s2w12p0 m192n128s2w16p0; do
  stamp "ab d64 causal 4k-16k, ours $v, the selection"
  timeout 120 python3 tools/ab_rounds.py --dtypes f16,bf16 --dims 64 --causal yes --seqlens 4096,8192,16384 --rounds 5 --ours-variant sm90:$v --json $OUT/j/ab-$v.json > $OUT/ab-$v.log 2>&1
done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
