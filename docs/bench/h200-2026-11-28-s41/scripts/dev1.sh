#!/bin/bash
# session 41, call 1 (v41.1): 20 buckets (tune-timing.yaml) tuned by fcjit-old (14004e9: each launch
# synchronized, 3 + 10 launches) and by this tree's fcjit (do_bench's timing: ~25 + 100 ms back to
# back), each into its own copy of one database the candidates were precompiled into; SM clock and
# power sampled meanwhile; then ab_rounds of the two databases' winners on the same rows (do_bench).
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry-t/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
S=docs/bench/h200-2026-11-28-s41/scripts/tune-timing.yaml
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S.%N $1" >> $OUT/gpu.txt; }
rm -rf /tmp/fcdb*; mkdir -m 700 -p /tmp/fcdb /tmp/fcdb-old /tmp/fcdb-new; mkdir -p $OUT/j
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -lms 100 > $OUT/smi.csv 2>&1 &
SMI=$!
stamp precompile
.carry-t/bin/fcjit --db /tmp/fcdb/k.db precompile --spec $S > $OUT/precompile.log 2>&1
cp /tmp/fcdb/k.db /tmp/fcdb-old/k.db; cp /tmp/fcdb/k.db /tmp/fcdb-new/k.db
stamp "tune old"
timeout 150 .carry-t/bin/fcjit-old --db /tmp/fcdb-old/k.db tune --spec $S > $OUT/tune-old.log 2>&1; echo "rc $?" >> $OUT/tune-old.log
stamp "tune new"
timeout 200 .carry-t/bin/fcjit --db /tmp/fcdb-new/k.db tune --spec $S > $OUT/tune-new.log 2>&1; echo "rc $?" >> $OUT/tune-new.log
stamp export
for b in old new; do .carry-t/bin/fcjit --db /tmp/fcdb-$b/k.db cache export $OUT/tune-$b.tsv > $OUT/export-$b.log 2>&1; done
stamp "ab d64"
export FC_TUNING_DB=/tmp/fcdb-new/k.db
A="python3 tools/ab_rounds.py --baseline-db /tmp/fcdb-old/k.db --dtypes bf16,f16 --rounds 5"
timeout 150 $A --dims 64 --seqlens 512,1024,2048,4096 --json $OUT/j/ab-d64.json > $OUT/ab-d64.log 2>&1
stamp "ab d128"
timeout 60 $A --dims 128 --causal yes --seqlens 1024,4096 --json $OUT/j/ab-d128.json > $OUT/ab-d128.log 2>&1
stamp end
kill $SMI
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
