#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
T=$PWD/.carry-tpl
date -u > $OUT/times.txt
( FC_GPU_TESTS=test_sm90_persistent_grid_loops_over_row_blocks timeout 120 .carry/bin/test_gpu > $OUT/ct-gpu-persistent.log 2>&1; echo "rc $?" >> $OUT/ct-gpu-persistent.log ) &
( FC_GPU_TESTS='test_bit_identical*' timeout 120 .carry/bin/test_gpu > $OUT/ct-gpu-bitident.log 2>&1; echo "rc $?" >> $OUT/ct-gpu-bitident.log ) &
timeout 200 python3 tools/check.py --matrix base --head-dims 96,128 --repeats 2 > $OUT/ct-check-base.log 2>&1; echo "rc $?" >> $OUT/ct-check-base.log
date -u >> $OUT/times.txt
timeout 100 python3 tools/check.py --matrix features --head-dims 96,128 --repeats 2 > $OUT/ct-check-features.log 2>&1; echo "rc $?" >> $OUT/ct-check-features.log
timeout 60 python3 tools/check.py --matrix varlen --head-dims 128 --families sm90 > $OUT/ct-check-varlen.log 2>&1; echo "rc $?" >> $OUT/ct-check-varlen.log
wait
date -u >> $OUT/times.txt
timeout 120 python3 tools/ab_rounds.py --ours-templates $T/ct --baseline-templates $T/head --dims 128 --causal yes --labels sweep,gqa --dtypes bf16 --rounds 7 --json $OUT/abr-ct2.json > $OUT/abr-ct2.log 2>&1
date -u >> $OUT/times.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
