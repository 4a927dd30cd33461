#!/bin/bash
# session 30, call 4 (H100): FP8's producer waits suspending (sleep) against main; then the FP8 standing on the
# library (HEAD: head_dim 256's slack 0), bench_fp8.py as in v29's run3
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
T=$PWD/.carry-tpl
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
stamp sleep
timeout 150 python3 tools/ab_rounds.py --baseline-templates $T/main --ours-templates $T/sleep --dtypes e4m3 --rounds 5 --json $OUT/abr-sleep.json > $OUT/abr-sleep.log 2>&1
stamp bench-fp8
timeout 380 python3 tools/bench_fp8.py --dims 64,128,256 --seqlens 1024,4096,16384 --no-accuracy --json $OUT/bench-fp8.json > $OUT/bench-fp8.log 2>&1
stamp end
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
