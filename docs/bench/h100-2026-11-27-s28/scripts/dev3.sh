#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > $OUT/pip.log 2>&1
T=$PWD/.carry-tpl
date -u > $OUT/times.txt
timeout 80 python3 tools/ab_rounds.py --ours-variant sm90:m128n128s2w12p1 --dims 128 --labels sweep,gqa --dtypes bf16 --rounds 5 --json $OUT/abr-n128.json > $OUT/abr-n128.log 2>&1
date -u >> $OUT/times.txt
timeout 70 python3 tools/ab_rounds.py --ours-templates $T/fp8q --baseline-templates $T/main --dtypes e4m3 --dims 256 --rounds 5 --json $OUT/abr-fp8q.json > $OUT/abr-fp8q.log 2>&1
date -u >> $OUT/times.txt
FC_TEMPLATE_DIR=$T/fp8q timeout 80 python3 tools/bench_fp8.py --dims 256 --seqlens 512,4096,16384 --json $OUT/bench-fp8q.json > $OUT/bench-fp8q.log 2>&1
date -u >> $OUT/times.txt
( FC_GPU_TESTS=test_sm90_persistent_grid_loops_over_row_blocks timeout 120 .carry/bin/test_gpu > $OUT/gpu-persistent.log 2>&1; echo "rc $?" >> $OUT/gpu-persistent.log
  FC_GPU_TESTS='test_bit_identical*' timeout 60 .carry/bin/test_gpu > $OUT/gpu-bitident.log 2>&1; echo "rc $?" >> $OUT/gpu-bitident.log ) &
timeout 110 python3 tools/check.py --matrix base --head-dims 128 --families sm90:m128n128s2w12p1 --repeats 2 > $OUT/chk-n128.log 2>&1; echo "rc $?" >> $OUT/chk-n128.log
FC_TEMPLATE_DIR=$T/fp8q timeout 50 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 256 --families sm90 >> $OUT/chk-fp8q.log 2>&1; echo "rc $?" >> $OUT/chk-fp8q.log
wait
date -u >> $OUT/times.txt
for tool in synccheck racecheck; do
  timeout 50 compute-sanitizer --tool $tool .carry/bin/fcjit --no-cache run --variant sm90:m128n128s2w12p1 --batch 2 --heads-q 8 --heads-kv 2 --seqlen 2000 --head-dim 128 --dtype bf16 --causal > $OUT/san-$tool.log 2>&1; echo "rc $?" >> $OUT/san-$tool.log
done
date -u >> $OUT/times.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
