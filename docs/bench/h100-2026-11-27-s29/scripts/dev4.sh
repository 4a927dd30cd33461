#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
T=$PWD/.carry-tpl
date -u >> $OUT/gpu.txt
timeout 100 python3 tools/ab_rounds.py --ours-templates $T/cur --baseline-templates $T/head --dtypes bf16 --dims 64,256 --rounds 5 --json $OUT/abr-hold.json > $OUT/abr-hold.log 2>&1
date -u >> $OUT/gpu.txt
timeout 200 python3 tools/bench.py --rounds 3 --labels sweep,gqa --json $OUT/bench-r3.json > $OUT/bench-r3.log 2>&1
date -u >> $OUT/gpu.txt
( timeout 170 python3 tools/check.py --matrix base --head-dims 64,256 --repeats 2 > $OUT/chk.log 2>&1; echo "rc $?" >> $OUT/chk.log ) &
( timeout 120 python3 tools/check.py --matrix features --head-dims 64,256 --families sm90 --repeats 2 > $OUT/chk-feat.log 2>&1; echo "rc $?" >> $OUT/chk-feat.log
  FC_GPU_TESTS='test_bit_identical*' timeout 50 .carry/bin/test_gpu >> $OUT/chk-feat.log 2>&1; echo "rc bitident $?" >> $OUT/chk-feat.log ) &
( for v in "m192n128s2w16p0 --head-dim 64" "m192n128s2w16p1 --head-dim 64" "m128n80s2w12p1 --head-dim 256"; do for tool in synccheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool .carry/bin/fcjit --no-cache run --variant sm90:$v --batch 2 --heads-q 8 --heads-kv 2 --seqlen 2000 --dtype bf16 --causal > $OUT/san-x.log 2>&1; echo "rc $? $v $tool" >> $OUT/san-x.log; cat $OUT/san-x.log >> $OUT/san.log
  done; done; rm $OUT/san-x.log ) &
wait
date -u >> $OUT/gpu.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
