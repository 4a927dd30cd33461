#!/bin/bash
# session 39, call 6 (v39.5): head_dim 128's two-consumer 128-key kernels run a masked tile's Q K^T at
# n64 for a warpgroup whose rows' keys end in its first half (.carry-t) against the head's templates
# (.carry-tpl/head through FC_TEMPLATE_DIR): head_dim 128 sweep and GQA rows in alternation, outputs
# compared bit for bit; then BENCH.md's base check at head_dim 128.
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry-t/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
HEAD_TPL=$PWD/.carry-tpl/head/kernel_templates
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "ab head_dim 128 causal"
timeout 150 python3 tools/ab_rounds.py --baseline-templates $HEAD_TPL --baseline-db /tmp/fcdb/b1.db --labels sweep,gqa --dtypes bf16,f16 --dims 128 --causal yes --rounds 5 --json $OUT/j/ab-c.json > $OUT/ab-c.log 2>&1
stamp "ab head_dim 128 without a mask"
timeout 60 python3 tools/ab_rounds.py --baseline-templates $HEAD_TPL --baseline-db /tmp/fcdb/b2.db --labels sweep --dtypes bf16 --dims 128 --causal no --seqlens 512,4096,16384 --rounds 5 --json $OUT/j/ab-n.json > $OUT/ab-n.log 2>&1
stamp "check base 128"
timeout 80 python3 tools/check.py --matrix base --head-dims 128 --repeats 2 > $OUT/check-128.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
