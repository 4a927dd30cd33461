#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
T=$PWD/.carry-tpl
date -u > $OUT/times.txt
timeout 170 python3 tools/ab_rounds.py --ours-templates $T/lz --baseline-templates $T/main2 --dtypes bf16 --labels sweep,gqa --rounds 5 --json $OUT/abr-lz.json > $OUT/abr-lz.log 2>&1
date -u >> $OUT/times.txt
timeout 90 python3 tools/ab_rounds.py --ours-templates $T/sk --baseline-templates $T/main2 --dtypes bf16 --dims 128,256 --labels sweep --rounds 3 --json $OUT/abr-sk.json > $OUT/abr-sk.log 2>&1
date -u >> $OUT/times.txt
( FC_TEMPLATE_DIR=$T/lz timeout 170 python3 tools/check.py --matrix base --head-dims 64,128,256 --repeats 2 > $OUT/lz-check-base.log 2>&1; echo "rc $?" >> $OUT/lz-check-base.log )
( FC_TEMPLATE_DIR=$T/lz timeout 80 python3 tools/check.py --matrix features --head-dims 128 --repeats 2 > $OUT/lz-check-features.log 2>&1; echo "rc $?" >> $OUT/lz-check-features.log )
date -u >> $OUT/times.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
