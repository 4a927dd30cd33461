#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > $OUT/pip.log 2>&1
date -u > $OUT/times.txt
timeout 150 python3 tools/bench_masks.py --only overhead --dims 64,128 --dtypes bf16 --rounds 3 --no-peers --json $OUT/masks-final.json > $OUT/masks-final.log 2>&1
date -u >> $OUT/times.txt
timeout 100 python3 tools/check.py --matrix features --head-dims 64,128 --families sm90 --repeats 2 > $OUT/final-check-features.log 2>&1; echo "rc $?" >> $OUT/final-check-features.log
date -u >> $OUT/times.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
