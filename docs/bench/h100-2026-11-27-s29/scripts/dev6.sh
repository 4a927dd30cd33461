#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
S=docs/bench/h100-2026-11-27-s29
date -u >> $OUT/gpu.txt
timeout 200 .carry/bin/fcjit tune --spec $S/tune-d128-split.yaml --iters 30 > $OUT/tune.log 2>&1; echo "rc $?" >> $OUT/tune.log
.carry/bin/fcjit cache export $OUT/tune-all.tsv >> $OUT/tune.log 2>&1
date -u >> $OUT/gpu.txt
timeout 70 python3 tools/ab_rounds.py --ours-variant sm90:m128n128s2w12p1 --baseline-variant sm90:m128n192s2w12p1 --dims 128 --dtypes f16 --labels sweep,gqa --seqlens 2048,4096,8192,16384 --rounds 5 --json $OUT/abr-f16n128.json > $OUT/abr-f16n128.log 2>&1
date -u >> $OUT/gpu.txt
timeout 200 python3 tools/bench.py --rounds 3 --labels sweep,gqa --json $OUT/bench-r3.json > $OUT/bench-r3.log 2>&1
date -u >> $OUT/gpu.txt
timeout 90 python3 tools/check.py --matrix base --head-dims 128 --repeats 2 > $OUT/chk.log 2>&1; echo "rc $?" >> $OUT/chk.log
date -u >> $OUT/gpu.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
