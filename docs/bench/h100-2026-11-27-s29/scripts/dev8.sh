#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
date -u >> $OUT/gpu.txt
timeout 100 python3 tools/ab_rounds.py --ours-variant sm90:m128n176s2w12p1 --dims 128 --dtypes bf16 --labels sweep,gqa --seqlens 2048,4096,8192,16384 --rounds 5 --json $OUT/abr-n176.json > $OUT/abr-n176.log 2>&1
date -u >> $OUT/gpu.txt
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
