#!/bin/bash
# session 30, call 2 (H100): FP8 candidates against main (cand1: head_dim 256 slack 0, 128 slack 0 + FA3's order;
# cand2: 256 slack 0, 128 FA3's order alone), head_dim 64 causal on two consumers, FP8 correctness on both
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
T=$PWD/.carry-tpl
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
stamp cand1
timeout 130 python3 tools/ab_rounds.py --baseline-templates $T/main --ours-templates $T/cand1 --dtypes e4m3 --dims 128,256 --rounds 5 --json $OUT/abr-cand1.json > $OUT/abr-cand1.log 2>&1
stamp cand2
timeout 80 python3 tools/ab_rounds.py --baseline-templates $T/main --ours-templates $T/cand2 --dtypes e4m3 --dims 128 --rounds 5 --json $OUT/abr-cand2.json > $OUT/abr-cand2.log 2>&1
stamp d64c
timeout 50 python3 tools/ab_rounds.py --ours-variant sm90:m128n128s2w12p1 --dims 64 --causal yes --seqlens 1024,2048 --dtypes bf16,f16 --rounds 7 --json $OUT/abr-d64c.json > $OUT/abr-d64c.log 2>&1
stamp check
for c in cand1 cand2; do FC_TEMPLATE_DIR=$T/$c timeout 100 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 64,128,256 --families sm90 --repeats 2 > $OUT/check-fp8-$c.log 2>&1; done
stamp end
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
