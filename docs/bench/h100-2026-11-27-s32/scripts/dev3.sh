#!/bin/bash
# session 32, call 3 (H100): v32.1 gated (ring position carried and descriptors from slot 0's with two
# consumers only; three consumers' SASS is main's) against main's templates in alternation (both
# folders explicit), outputs compared bit for bit; then BENCH.md's rule on the library (it embeds them)
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
AB="python3 tools/ab_rounds.py --baseline-templates $PWD/.carry-tpl/base --ours-templates $PWD/.carry-tpl/gated"
stamp "ab d128"
timeout 130 $AB --labels sweep,gqa --dtypes f16,bf16 --dims 128 --seqlens 2048,4096,8192,16384 --rounds 3 --json $OUT/j/ab-d128.json > $OUT/ab-d128.log 2>&1
stamp "ab d64 d256"
timeout 110 $AB --dtypes f16,bf16 --dims 64,256 --seqlens 4096,16384 --rounds 3 --noise-kernels 'd64_(causal_)?m192' --json $OUT/j/ab-d64-d256.json > $OUT/ab-d64-d256.log 2>&1
stamp "ab fp8"
timeout 60 $AB --dtypes e4m3 --dims 128,256 --seqlens 4096,16384 --rounds 3 --json $OUT/j/ab-fp8.json > $OUT/ab-fp8.log 2>&1
stamp "check 16"
timeout 120 python3 tools/check.py --matrix base --head-dims 128,256 --repeats 2 > $OUT/check-16.log 2>&1; echo "rc $?" >> $OUT/check-16.log
stamp "check fp8"
timeout 60 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 128,256 --repeats 2 > $OUT/check-fp8.log 2>&1; echo "rc $?" >> $OUT/check-fp8.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
