#!/bin/bash
# session 31, call 9 (H100): more stages and other key tiles against the selection, in alternation:
# head_dim 64 causal 1k-2k (the plain schedule's rows), head_dim 128 causal 1k-4k (16-bit)
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
ab() {   # tag variant dims seqlens
    stamp "$1 $2"
    timeout 45 python3 tools/ab_rounds.py --ours-variant sm90:$2 --dtypes bf16,f16 --dims $3 --seqlens $4 --causal yes --rounds 3 --json $OUT/j/$1-$2.json > $OUT/$1-$2.log 2>&1
}
for v in m64n128s3w4 m64n128s4w4 m64n64s2w4 m64n64s4w4; do ab d64c $v 64 1024,2048; done
for v in m128n128s3w12p1 m128n64s2w12p1 m128n128s2w12p0; do ab d128c $v 128 1024,2048,4096; done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
