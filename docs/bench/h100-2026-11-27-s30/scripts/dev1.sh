#!/bin/bash
# session 30, call 1: FP8's rescale with a slack of 0 (slack0) against main, FA3's FP8 order (after) against
# slack0, head_dim 64 causal on two consumers against the selection, FP8 correctness on slack0 (the library's)
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
T=$PWD/.carry-tpl
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
stamp slack0
timeout 170 python3 tools/ab_rounds.py --baseline-templates $T/main --ours-templates $T/slack0 --dtypes e4m3 --rounds 5 --json $OUT/abr-slack0.json > $OUT/abr-slack0.log 2>&1
stamp after
timeout 130 python3 tools/ab_rounds.py --baseline-templates $T/slack0 --ours-templates $T/after --dtypes e4m3 --dims 128,256 --rounds 5 --json $OUT/abr-after.json > $OUT/abr-after.log 2>&1
stamp d64c
timeout 50 python3 tools/ab_rounds.py --ours-variant sm90:m128n128s2w12p1 --dims 64 --causal yes --seqlens 1024,2048,4096 --dtypes bf16,f16 --rounds 5 --json $OUT/abr-d64c.json > $OUT/abr-d64c.log 2>&1
stamp check
timeout 150 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 64,128,256 --families sm90 --repeats 2 > $OUT/check-fp8.log 2>&1
stamp end
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
