#!/bin/bash
# session 31, call 4 (H100): 16-bit head_dim 256 on 64-key tiles against the shipped selection (80), 5
# alternations, bf16 and f16; then its buckets tuned again with both tiles (--margin 1), exported, and
# head_dim 256 checked on that database
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
S=docs/bench/h100-2026-11-27-s31
mkdir -p $OUT/j
stamp ab-d256
timeout 150 python3 tools/ab_rounds.py --ours-variant sm90:m128n64s2w12p1 --dtypes bf16,f16 --dims 256 --seqlens 1024,2048,4096,8192,16384 --rounds 5 --json $OUT/j/abr-d256n64.json > $OUT/abr-d256n64.log 2>&1
stamp tune
timeout 150 .carry/bin/fcjit --db $FC_TUNING_DB tune --spec $S/tune-d256.yaml --iters 30 --margin 1 > $OUT/tune.log 2>&1; echo "rc $?" >> $OUT/tune.log
.carry/bin/fcjit --db $FC_TUNING_DB cache export $OUT/tune-all.tsv >> $OUT/tune.log 2>&1
stamp check
timeout 120 python3 tools/check.py --matrix base --head-dims 256 --repeats 2 > $OUT/check-d256.log 2>&1; echo "rc $?" >> $OUT/check-d256.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
