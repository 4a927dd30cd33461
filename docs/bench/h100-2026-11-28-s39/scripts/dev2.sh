#!/bin/bash
# session 39, call 2 (v39.2): TRIM (each consumer warpgroup's last P V over only the keys its rows
# see, after the key loop) in the library .carry-t (this tree's templates built in) against the head's templates
# (.carry-tpl/head, the same library through FC_TEMPLATE_DIR): the causal rows in alternation on the same tensors
# (each row's two outputs compared bit for bit), then BENCH.md's base checks of the changed kernels.

export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry-t/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
HEAD_TPL=$PWD/.carry-tpl/head/kernel_templates
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "ab 16-bit causal sweep,gqa"
timeout 200 python3 tools/ab_rounds.py --baseline-templates $HEAD_TPL --baseline-db /tmp/fcdb/b1.db --labels sweep,gqa --dtypes bf16,f16 --causal yes --rounds 5 --json $OUT/j/ab-16c.json > $OUT/ab-16c.log 2>&1
stamp "ab fp8 causal"
timeout 100 python3 tools/ab_rounds.py --baseline-templates $HEAD_TPL --baseline-db /tmp/fcdb/b2.db --dtypes e4m3 --dims 64,128,256 --causal yes --seqlens 1024,4096,16384 --rounds 5 --json $OUT/j/ab-fp8c.json > $OUT/ab-fp8c.log 2>&1
stamp "check base 16-bit"
timeout 170 python3 tools/check.py --matrix base --head-dims 64,128,256 --repeats 1 > $OUT/check-base.log 2>&1
stamp "check base e4m3"
timeout 90 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 64,128,256 --repeats 1 > $OUT/check-fp8.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
