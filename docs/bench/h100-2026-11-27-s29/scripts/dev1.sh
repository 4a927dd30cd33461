#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv > $OUT/gpu.txt
T=$PWD/.carry-tpl
date -u >> $OUT/gpu.txt
timeout 175 python3 tools/ab_rounds.py --ours-templates $T/split --baseline-templates $T/main --dtypes bf16 --labels sweep,gqa --rounds 5 --json $OUT/abr-split.json > $OUT/abr-split.log 2>&1
date -u >> $OUT/gpu.txt
timeout 140 python3 tools/ab_rounds.py --ours-templates $T/split --baseline-templates $T/main --dtypes e4m3 --rounds 5 --json $OUT/abr-fp8split.json > $OUT/abr-fp8split.log 2>&1
date -u >> $OUT/gpu.txt
export FC_TEMPLATE_DIR=$T/split
( timeout 200 python3 tools/check.py --matrix base --head-dims 64,96,128,256 --repeats 2 > $OUT/chk.log 2>&1; echo "rc $?" >> $OUT/chk.log ) &
( timeout 200 python3 tools/check.py --matrix features --head-dims 64,128,256 --families sm90 --repeats 2 > $OUT/chk-feat.log 2>&1; echo "rc $?" >> $OUT/chk-feat.log
  timeout 100 python3 tools/check.py --matrix varlen --head-dims 64,128 --repeats 2 >> $OUT/chk-feat.log 2>&1; echo "rc $?" >> $OUT/chk-feat.log ) &
( timeout 120 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 64,128,256 --families sm90 --repeats 2 > $OUT/chk-fp8.log 2>&1; echo "rc $?" >> $OUT/chk-fp8.log
  FC_GPU_TESTS='test_bit_identical*' timeout 60 .carry/bin/test_gpu >> $OUT/chk-fp8.log 2>&1; echo "rc bitident $?" >> $OUT/chk-fp8.log ) &
( for v in m128n128s2w12p1 m128n192s2w12p1; do for tool in synccheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool .carry/bin/fcjit --no-cache run --variant sm90:$v --batch 2 --heads-q 8 --heads-kv 2 --seqlen 2000 --head-dim 128 --dtype bf16 --causal > $OUT/san-$v-$tool.log 2>&1; echo "rc $?" >> $OUT/san-$v-$tool.log
  done; done; cat $OUT/san-*.log > $OUT/san.log; rm $OUT/san-*.log ) &
wait
date -u >> $OUT/gpu.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
