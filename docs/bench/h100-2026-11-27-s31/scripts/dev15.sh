#!/bin/bash
# session 31, call 15 (H100): 16-bit head_dim 128 causal without turns against the shipped selection
# (5 alternations, the sweep's causal rows and the GQA rows), then those buckets tuned with both
# (--margin 1), exported; the no-turns kernels checked by BENCH.md's rule, forced
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
S=docs/bench/h100-2026-11-27-s31
mkdir -p $OUT/j
stamp ab
timeout 110 python3 tools/ab_rounds.py --ours-variant sm90:m128n128s2w12p0 --labels sweep,gqa --dims 128 --causal yes --seqlens 1024,2048,4096,8192,16384 --dtypes bf16,f16 --rounds 5 --json $OUT/j/abr-d128c-p0.json > $OUT/abr-d128c-p0.log 2>&1
stamp tune
timeout 130 .carry/bin/fcjit --db $FC_TUNING_DB tune --spec $S/tune-d128-causal-turns.yaml --iters 30 --margin 1 > $OUT/tune.log 2>&1; echo "rc $?" >> $OUT/tune.log
.carry/bin/fcjit --db $FC_TUNING_DB cache export $OUT/tune-all.tsv >> $OUT/tune.log 2>&1
stamp check
timeout 80 python3 tools/check.py --matrix base --head-dims 128 --families sm90:m128n128s2w12p0 --repeats 2 > $OUT/check-d128-p0.log 2>&1; echo "rc $?" >> $OUT/check-d128-p0.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
