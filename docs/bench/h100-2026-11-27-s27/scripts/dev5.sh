#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
T=$PWD/.carry-tpl
date -u > $OUT/times.txt
timeout 300 python3 tools/ab_rounds.py --ours-templates $T/ct --baseline-templates $T/head --dims 128 --labels sweep,gqa --dtypes bf16,f16 --rounds 5 --json $OUT/abr-ct.json > $OUT/abr-ct.log 2>&1
date -u >> $OUT/times.txt
for tool in synccheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool .carry/bin/fcjit --no-cache run --variant sm90:m128n192s2w12p1 --batch 2 --heads-q 8 --heads-kv 2 --seqlen 2000 --head-dim 128 --dtype bf16 --causal > $OUT/ct-$tool.log 2>&1; echo "rc $?" >> $OUT/ct-$tool.log
done
date -u >> $OUT/times.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
