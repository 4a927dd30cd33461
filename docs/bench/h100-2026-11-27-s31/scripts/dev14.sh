#!/bin/bash
# session 31, call 14 (H100): issue 16's GQA prefill rows (head_dim 128 causal) on other tiles against
# the shipped selection, 5 alternations
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
for v in m128n128s2w12p0 m128n128s3w12p1 m128n192s2w12p1; do
    stamp "gqa $v"
    timeout 70 python3 tools/ab_rounds.py --ours-variant sm90:$v --labels gqa --dtypes bf16,f16 --rounds 5 --json $OUT/j/gqa-$v.json > $OUT/gqa-$v.log 2>&1
done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
