#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > $OUT/pip.log 2>&1
T=$PWD/.carry-tpl
date -u > $OUT/times.txt
timeout 60 python3 tools/ab_rounds.py --baseline-templates $T/main --dtypes bf16 --dims 96 --rounds 5 --json $OUT/abr-d96.json > $OUT/abr-d96.log 2>&1
date -u >> $OUT/times.txt
timeout 130 python3 tools/bench_fp8.py --dims 256 --json $OUT/bench-fp8-d256.json > $OUT/bench-fp8-d256.log 2>&1
date -u >> $OUT/times.txt
( timeout 60 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 256 --families sm90 --repeats 2 > $OUT/chk.log 2>&1; echo "rc $?" >> $OUT/chk.log
  timeout 50 python3 tools/check.py --matrix features --dtype e4m3 --head-dims 256 --families sm90 >> $OUT/chk.log 2>&1; echo "rc $?" >> $OUT/chk.log
  timeout 70 python3 tools/check.py --matrix base --head-dims 96,128 >> $OUT/chk.log 2>&1; echo "rc $?" >> $OUT/chk.log )
date -u >> $OUT/times.txt
timeout 200 python3 tools/bench.py --rounds 3 --labels sweep,gqa --json $OUT/bench-r3.json > $OUT/bench-r3.log 2>&1
date -u >> $OUT/times.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
