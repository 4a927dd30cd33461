#!/bin/bash
# session 39, call 10 (v39.7): v39.5's narrow Q K^T with one copy of the softmax (.carry-tpl/v8: the two
# widths are two instantiations of the turn's issue and its wait for Q K^T, the masked step's softmax
# shared) against the head's templates (this library's own): head_dim 128 causal and GQA rows in
# alternation, outputs compared bit for bit.
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry-t/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "ab head_dim 128 causal"
timeout 100 python3 tools/ab_rounds.py --ours-templates $PWD/.carry-tpl/v8/kernel_templates --baseline-db /tmp/fcdb/b1.db --labels sweep,gqa --dtypes bf16,f16 --dims 128 --causal yes --rounds 5 --json $OUT/j/ab-c.json > $OUT/ab-c.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
