#!/bin/bash
# session 31, call 1 (H100): a survey of head_dim 64 tiles in alternation against the selection:
# FP8 (e4m3) rows from 2k keys, and 16-bit causal rows of 1k-4k keys
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
for v in m192n160s2w16p1 m192n160s2w16p0 m192n128s2w16p1 m192n128s2w16p0 m128n128s2w12p1 m128n160s2w12p1 m128n192s2w12p1 m192n192s2w16p1; do
    stamp "fp8 $v"
    timeout 60 python3 tools/ab_rounds.py --ours-variant sm90:$v --dtypes e4m3 --dims 64 --seqlens 2048,4096,8192,16384 --rounds 3 --json $OUT/j/fp8-$v.json > $OUT/fp8-$v.log 2>&1
done
for v in m192n128s2w16p1 m192n128s2w16p0 m128n128s2w12p1 m128n128s2w12p0 m128n192s2w12p1 m192n192s2w16p1 m128n176s2w12p1 m64n128s2w4; do
    stamp "d64c $v"
    timeout 45 python3 tools/ab_rounds.py --ours-variant sm90:$v --dtypes bf16,f16 --dims 64 --causal yes --seqlens 1024,2048,4096 --rounds 3 --json $OUT/j/d64c-$v.json > $OUT/d64c-$v.log 2>&1
done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
