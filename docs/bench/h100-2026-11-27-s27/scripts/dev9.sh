#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
T=$PWD/.carry-tpl
date -u > $OUT/times.txt
timeout 200 python3 tools/ab_rounds.py --ours-templates $T/lz2 --baseline-templates $T/main2 --dims 64,256 --dtypes f16,bf16 --rounds 5 --json $OUT/abr-lz2.json > $OUT/abr-lz2.log 2>&1
date -u >> $OUT/times.txt
( FC_TEMPLATE_DIR=$T/lz2 timeout 110 python3 tools/check.py --matrix features --head-dims 64,256 --repeats 2 > $OUT/lz2-check-features.log 2>&1; echo "rc $?" >> $OUT/lz2-check-features.log )
( FC_TEMPLATE_DIR=$T/lz2 timeout 60 python3 tools/check.py --matrix varlen --head-dims 64,256 --families sm90 > $OUT/lz2-check-varlen.log 2>&1; echo "rc $?" >> $OUT/lz2-check-varlen.log )
date -u >> $OUT/times.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
