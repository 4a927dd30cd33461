#!/bin/bash
# session 36, call 5 (timing only, outputs wrong by design): the softmax's row sums left out (nosum.patch,
# .carry-tpl/nosum: no FADD a score; the sum a constant 1 a tile), the upper bound of a row sum taken off
# the consumers' instruction stream (e.g. by the tensor cores, a column of ones beside V). Against the
# library's own templates, in alternation: FP8 head_dim 64 and 128, bf16 head_dim 64 and 128.
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
NS=$PWD/.carry-tpl/nosum/kernel_templates
stamp "ab nosum e4m3 d64,128"
timeout 100 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/b1.db --ours-templates $NS --dtypes e4m3 --dims 64,128 --causal both --seqlens 4096,16384 --rounds 5 --json $OUT/j/ab-e4m3.json > $OUT/ab-e4m3.log 2>&1
stamp "ab nosum bf16 d64,128"
timeout 100 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/b2.db --ours-templates $NS --dtypes bf16 --dims 64,128 --causal both --seqlens 4096,16384 --rounds 5 --json $OUT/j/ab-bf16.json > $OUT/ab-bf16.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
