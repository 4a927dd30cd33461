#!/bin/bash
# session 41, call 4: the H200's new winners (run3's, the whole shipped spec tuned with do_bench's
# timing and the finals) as shipped: tuning_db/winners.tsv embedded in the library, a fresh database
# (no fcjit carried: the tree, both peers' wheels and the library fill the device tool's 64 MiB);
# bench.py's whole set (sweep, GQA, small, decode, few-query rows) and head_dim 96's sweep rows against
# the peers, then bench_fp8.py (v30.10's rows) against FA3 fp8 and cuDNN fp8, three rounds each.
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry-t/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb*; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version,memory.total --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "bench (all rows)"
timeout 300 python3 tools/bench.py --rounds 3 --json $OUT/j/bench.json > $OUT/bench.log 2>&1; echo "rc $?" >> $OUT/bench.log
stamp "bench d96 bf16"
timeout 70 python3 tools/bench.py --rounds 3 --dims 96 --dtypes bf16 --no-extra --json $OUT/j/bench-d96.json > $OUT/bench-d96.log 2>&1; echo "rc $?" >> $OUT/bench-d96.log
stamp "bench_fp8"
timeout $(( 575 - SECONDS )) python3 tools/bench_fp8.py --dims 64,128,256 --seqlens 1024,4096,16384 --rounds 3 --no-accuracy --json $OUT/j/bench-fp8.json > $OUT/bench-fp8.log 2>&1; echo "rc $?" >> $OUT/bench-fp8.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
