#!/bin/bash
# session 39, call 4 (v39.3, confirmation): the same A/B as dev3.sh on the rows of the two changed
# kernels only (head_dim 64 from 4k keys), 9 alternations; then varlen, paged and features checks at
# head_dim 64 with the turns forced (the three-consumer turns kernels' other forms).
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry-t/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
HEAD_TPL=$PWD/.carry-tpl/head/kernel_templates
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "ab 16-bit head_dim 64, 4k-16k"
timeout 150 python3 tools/ab_rounds.py --baseline-templates $HEAD_TPL --baseline-db /tmp/fcdb/b1.db --labels sweep --dtypes bf16,f16 --dims 64 --causal both --seqlens 4096,8192,16384 --rounds 9 --json $OUT/j/ab-16.json > $OUT/ab-16.log 2>&1
stamp "ab fp8 head_dim 64, 4k and 16k"
timeout 90 python3 tools/ab_rounds.py --baseline-templates $HEAD_TPL --baseline-db /tmp/fcdb/b2.db --dtypes e4m3 --dims 64 --causal both --seqlens 4096,16384 --rounds 9 --json $OUT/j/ab-fp8.json > $OUT/ab-fp8.log 2>&1
stamp "checks"
timeout 60 python3 tools/check.py --matrix varlen --head-dims 64 --repeats 2 --families sm90:m192n128s2w16p1 > $OUT/check-varlen.log 2>&1
timeout 60 python3 tools/check.py --matrix paged --head-dims 64 --repeats 2 --families sm90:m192n128s2w16p1 > $OUT/check-paged.log 2>&1
timeout 60 python3 tools/check.py --matrix features --head-dims 64 --repeats 1 --families sm90:m192n128s2w16p1 > $OUT/check-features.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
