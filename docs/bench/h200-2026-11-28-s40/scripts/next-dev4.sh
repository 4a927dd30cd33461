#!/bin/bash
# Prepared in session 40 for the next session on an H200 (not run: no device time left). PERF_NOTES v40's
# next (1): the H100's hand-picked head_dim 64 rows, A/B under do_bench on the H200 (its own shipped rows,
# a fresh database): causal 512 and 1k keys 64- against 128-key tiles; causal 2k two consumers without
# turns against the plain m64n128; then v40.3's one-bucket tune, each fcjit (scripts/dev3.sh).
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry-t/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
A="python3 tools/ab_rounds.py --dtypes bf16,f16 --dims 64 --causal yes --rounds 7"
stamp "d64 causal 512-1k: n64 against n128"
timeout 150 $A --seqlens 512,1024 --ours-variant sm90:m64n64s2w4p0 --baseline-variant sm90:m64n128s2w4p0 --json $OUT/j/ab-n64.json > $OUT/ab-n64.log 2>&1
stamp "d64 causal 2k: m128n128s2w12 against m64n128s2w4"
timeout 120 $A --seqlens 2048 --ours-variant sm90:m128n128s2w12p0 --baseline-variant sm90:m64n128s2w4p0 --json $OUT/j/ab-2k.json > $OUT/ab-2k.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
