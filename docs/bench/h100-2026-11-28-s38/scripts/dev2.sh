#!/bin/bash
# session 38, call 2 (v38.2): a third (and fourth) K/V stage for three consumers taking turns, forced
# against the selection of the same library, in alternation (tools/ab_rounds.py --ours-variant): 16-bit
# head_dim 64 at 2k-16k keys, causal or not; 16-bit head_dim 128 causal 2k-16k and the GQA rows on
# m128n128s3w12p. First BENCH.md's check of the two forced three-stage kernels (base matrix).
export LD_LIBRARY_PATH=$PWD/.carry-s/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry-s/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "check s3 d64, d128"
timeout 150 python3 tools/check.py --matrix base --head-dims 64 --repeats 2 --families sm90:m192n128s3w16p1 > $OUT/check-d64-s3.log 2>&1
timeout 150 python3 tools/check.py --matrix base --head-dims 128 --repeats 2 --families sm90:m128n128s3w12p1 > $OUT/check-d128-s3.log 2>&1
stamp "ab d64 s3"
timeout 150 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/b1.db --ours-variant sm90:m192n128s3w16p1 --dtypes f16,bf16 --dims 64 --causal both --seqlens 2048,4096,8192,16384 --rounds 5 --json $OUT/j/ab-d64-s3.json > $OUT/ab-d64-s3.log 2>&1
stamp "ab d64 s4"
timeout 150 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/b2.db --ours-variant sm90:m192n128s4w16p1 --dtypes f16,bf16 --dims 64 --causal both --seqlens 4096,8192,16384 --rounds 5 --json $OUT/j/ab-d64-s4.json > $OUT/ab-d64-s4.log 2>&1
stamp "ab d128 causal s3"
timeout 150 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/b3.db --ours-variant sm90:m128n128s3w12p1 --labels sweep,gqa --dtypes f16,bf16 --dims 128 --causal yes --seqlens 2048,4096,8192,16384 --rounds 5 --json $OUT/j/ab-d128-s3.json > $OUT/ab-d128-s3.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
