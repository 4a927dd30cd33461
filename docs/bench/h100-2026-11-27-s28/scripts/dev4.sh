#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > $OUT/pip.log 2>&1
T=$PWD/.carry-tpl
S=docs/bench/h100-2026-11-27-s28
date -u > $OUT/times.txt
timeout 90 .carry/bin/fcjit tune --spec $S/tune-d128-causal-4k.yaml --iters 30 > $OUT/tune.log 2>&1; echo "rc $?" >> $OUT/tune.log
.carry/bin/fcjit cache export $OUT/tune-all.tsv >> $OUT/tune.log 2>&1
date -u >> $OUT/times.txt
timeout 70 python3 tools/ab_rounds.py --ours-variant sm90:m128n128s2w12p1 --baseline-variant sm90:m128n192s2w12p1 --dims 128 --causal yes --seqlens 4096 --labels sweep,gqa --dtypes f16,bf16 --rounds 7 --json $OUT/abr-c4k.json > $OUT/abr-c4k.log 2>&1
date -u >> $OUT/times.txt
timeout 230 python3 tools/bench.py --rounds 3 --labels sweep,gqa --json $OUT/bench-r3.json > $OUT/bench-r3.log 2>&1
date -u >> $OUT/times.txt
FC_TEMPLATE_DIR=$T/main timeout 60 python3 tools/bench_fp8.py --dims 256 --seqlens 512,4096,16384 --json $OUT/bench-fp8-main.json > $OUT/bench-fp8-main.log 2>&1
date -u >> $OUT/times.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
