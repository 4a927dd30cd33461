#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
T=$PWD/.carry-tpl
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl 2>&1 | tail -2
date -u > $OUT/times.txt
timeout 90 python3 tools/ab_rounds.py --baseline-templates $T/head --dims 96 --causal yes --dtypes bf16,f16 --rounds 5 --json $OUT/abr-ct-d96.json > $OUT/abr-ct-d96.log 2>&1
date -u >> $OUT/times.txt
timeout 330 python3 tools/bench.py --rounds 3 --json $OUT/bench-final-r3.json > $OUT/bench-final-r3.log 2>&1; echo "rc $?" >> $OUT/bench-final-r3.log
date -u >> $OUT/times.txt
timeout 120 python3 tools/bench_masks.py --only overhead --dtypes bf16 --dims 128 --rounds 3 --no-peers --json $OUT/masks-d128.json > $OUT/masks-d128.log 2>&1; echo "rc $?" >> $OUT/masks-d128.log
date -u >> $OUT/times.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
