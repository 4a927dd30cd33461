#!/bin/bash
# session 31, call 3 (H100): FP8 head_dim 64 causal 2k's bucket tuned again (three consumers among the
# candidates), exported; FP8 head_dim 64 checked and benchmarked against the peers on that database;
# a survey of 16-bit head_dim 256 and head_dim 64 (no mask) tiles against the selection
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
S=docs/bench/h100-2026-11-27-s31
mkdir -p $OUT/j
stamp tune
timeout 120 .carry/bin/fcjit --db $FC_TUNING_DB tune --spec $S/tune-fp8-d64-causal-2k.yaml --iters 30 > $OUT/tune.log 2>&1; echo "rc $?" >> $OUT/tune.log
.carry/bin/fcjit --db $FC_TUNING_DB cache export $OUT/tune-all.tsv >> $OUT/tune.log 2>&1
stamp plan
.carry/bin/fcjit --db $FC_TUNING_DB explain --batch 8 --heads-q 32 --heads-kv 32 --seqlen 2048 --head-dim 64 --causal --dtype e4m3 >> $OUT/tune.log 2>&1
stamp bench-fp8
timeout 100 python3 tools/bench_fp8.py --dims 64 --seqlens 1024,2048,4096,16384 --rounds 3 --no-accuracy --json $OUT/j/bench-fp8-d64.json > $OUT/bench-fp8-d64.log 2>&1
stamp check-fp8
timeout 100 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 64 --families sm90 --repeats 2 > $OUT/check-fp8-d64.log 2>&1; echo "rc $?" >> $OUT/check-fp8-d64.log
ab() {   # tag variant dims seqlens causal
    stamp "$1 $2"
    timeout 50 python3 tools/ab_rounds.py --ours-variant sm90:$2 --dtypes bf16 --dims $3 --seqlens $4 --causal $5 --rounds 3 --json $OUT/j/$1-$2.json > $OUT/$1-$2.log 2>&1
}
for v in m128n64s2w12p1 m128n112s2w12p1 m128n80s2w12p0 m128n128s2w12p1; do
    ab d256 $v 256 1024,2048,4096,8192,16384 both
done
for v in m192n128s2w16p0 m128n128s2w12p1 m128n192s2w12p1; do
    ab d64n $v 64 2048,4096,8192,16384 no
done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
