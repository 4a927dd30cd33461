#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > $OUT/pip.log 2>&1
T=$PWD/.carry-tpl
date -u > $OUT/times.txt
timeout 130 python3 tools/ab_rounds.py --softcap 30 --ours-templates $T/caps --dims 64,128 --dtypes bf16 --rounds 5 --json $OUT/abr-caps.json > $OUT/abr-caps.log 2>&1
date -u >> $OUT/times.txt
timeout 50 python3 tools/ab_rounds.py --ours-variant sm90:m128n128s2w12p1 --dims 64 --causal yes --seqlens 1024,2048,4096 --dtypes bf16 --rounds 5 --json $OUT/abr-d64c-m128.json > $OUT/abr-d64c-m128.log 2>&1
timeout 50 python3 tools/ab_rounds.py --ours-variant sm90:m192n128s2w16p1 --dims 64 --causal yes --seqlens 1024,2048 --dtypes bf16 --rounds 5 --json $OUT/abr-d64c-m192.json > $OUT/abr-d64c-m192.log 2>&1
date -u >> $OUT/times.txt
FC_TEMPLATE_DIR=$T/caps timeout 90 python3 tools/check.py --matrix features --head-dims 64,128 --families sm90 > $OUT/caps-check.log 2>&1; echo "rc $?" >> $OUT/caps-check.log
date -u >> $OUT/times.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
