#!/bin/bash
# session 31, call 2 (H100): FP8 tiles in alternation against the selection: head_dim 128 and 256
# (1k-16k keys), head_dim 64 at 512-1k keys
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
ab() {   # tag variant dims seqlens
    stamp "$1 $2"
    timeout 50 python3 tools/ab_rounds.py --ours-variant sm90:$2 --dtypes e4m3 --dims $3 --seqlens $4 --rounds 3 --json $OUT/j/$1-$2.json > $OUT/$1-$2.log 2>&1
}
for v in m128n128s2w12p1 m128n160s2w12p1 m128n192s2w12p1 m128n224s2w12p1 m128n128s2w12p0 m128n224s2w12p0 m192n128s2w16p0; do
    ab d128 $v 128 1024,2048,4096,8192,16384
done
for v in m128n64s2w12p1 m128n128s2w12p0 m128n160s2w12p1; do
    ab d256 $v 256 1024,2048,4096,8192,16384
done
for v in m192n128s2w16p0 m192n160s2w16p0 m128n128s2w12p0; do
    ab d64s $v 64 512,1024
done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
