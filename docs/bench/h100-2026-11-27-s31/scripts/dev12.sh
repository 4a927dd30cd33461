#!/bin/bash
# session 31, call 12 (H100): the next buckets to re-tune, surveyed against the final selection (not
# shipped): head_dim 64 without a mask at 512-1k, head_dim 128 at 512-1k (16-bit)
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
ab() {   # tag variant dims seqlens causal
    stamp "$1 $2"
    timeout 40 python3 tools/ab_rounds.py --ours-variant sm90:$2 --dtypes bf16,f16 --dims $3 --seqlens $4 --causal $5 --rounds 3 --json $OUT/j/$1-$2.json > $OUT/$1-$2.log 2>&1
}
ab d64n m64n64s2w4 64 512,1024 no
ab d64n m128n128s2w12p1 64 512,1024 no
for v in m64n64s2w4 m64n128s2w4 m128n128s2w12p0 m128n192s2w12p1; do ab d128s $v 128 512,1024 both; done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
