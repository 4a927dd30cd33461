#!/bin/bash
# session 32, call 2 (H100): 16-bit head_dim 64 causal 4k-16k: tiles against the shipped selection (its
# winner chosen before v29's loop split) in alternation; then those buckets tuned with the candidates
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
S=docs/bench/h100-2026-11-27-s32
mkdir -p $OUT/j
for v in m192n128s2w16p0 m128n128s2w12p1 m128n128s2w12p0 m192n192s2w16p1; do
    stamp "d64c $v"
    timeout 60 python3 tools/ab_rounds.py --ours-variant sm90:$v --dtypes f16,bf16 --dims 64 --causal yes --seqlens 4096,8192,16384 --rounds 3 --json $OUT/j/d64c-$v.json > $OUT/d64c-$v.log 2>&1
done
stamp tune
timeout 150 .carry/bin/fcjit --db $FC_TUNING_DB tune --spec $S/tune-d64-causal-long.yaml --iters 30 > $OUT/tune.log 2>&1; echo "rc $?" >> $OUT/tune.log
.carry/bin/fcjit --db $FC_TUNING_DB cache export $OUT/tune-all.tsv >> $OUT/tune.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
