#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
T=$PWD/.carry-tpl
date -u >> $OUT/gpu.txt
timeout 200 python3 tools/bench.py --rounds 3 --labels sweep,gqa --json $OUT/bench-r3.json > $OUT/bench-r3.log 2>&1
date -u >> $OUT/gpu.txt
timeout 90 python3 tools/ab_rounds.py --ours-templates $T/nohold --baseline-templates $T/main --dtypes bf16 --dims 64,256 --rounds 5 --json $OUT/abr-nohold.json > $OUT/abr-nohold.log 2>&1
date -u >> $OUT/gpu.txt
timeout 60 python3 tools/ab_rounds.py --ours-templates $T/noholdall --baseline-templates $T/main --dtypes bf16 --dims 64 --rounds 5 --json $OUT/abr-noholdall.json > $OUT/abr-noholdall.log 2>&1
date -u >> $OUT/gpu.txt
timeout 130 python3 tools/bench_fp8.py --dims 64,128,256 --seqlens 1024,4096,16384 --no-accuracy --json $OUT/bench-fp8.json > $OUT/bench-fp8.log 2>&1
date -u >> $OUT/gpu.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
