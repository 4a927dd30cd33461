#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > $OUT/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv > $OUT/gpu.txt
T=$PWD/.carry-tpl
date -u > $OUT/times.txt
timeout 170 python3 tools/ab_rounds.py --ours-templates $T/lz --baseline-templates $T/main --dtypes bf16 --labels sweep,gqa --rounds 5 --json $OUT/abr-lz128.json > $OUT/abr-lz128.log 2>&1
date -u >> $OUT/times.txt
timeout 150 python3 tools/ab_rounds.py --ours-templates $T/lz --baseline-templates $T/main --dtypes e4m3 --rounds 5 --json $OUT/abr-fp8lz.json > $OUT/abr-fp8lz.log 2>&1
date -u >> $OUT/times.txt
( FC_TEMPLATE_DIR=$T/lz timeout 110 python3 tools/check.py --matrix base --head-dims 64,96,128,256 > $OUT/lz-check-base.log 2>&1; echo "rc $?" >> $OUT/lz-check-base.log )
( FC_TEMPLATE_DIR=$T/lz timeout 90 python3 tools/check.py --matrix base --dtype e4m3 --out-dtype bf16 --head-dims 64,128,256 --families sm90 --repeats 2 > $OUT/lz-check-fp8.log 2>&1; echo "rc $?" >> $OUT/lz-check-fp8.log )
date -u >> $OUT/times.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
