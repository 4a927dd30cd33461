#!/bin/bash
# session 33, call 7 (H100): the GQA prefill row under Nsight Compute's full set with per-instruction
# stall sampling, the landed library (static pairs) against .carry-exp (the counter): where the
# counter's extra 4.4% of SM active cycles go (run6); stall tables and opcode mix to $OUT
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
SCRIPT=docs/bench/h100-2026-11-27-s33/scripts/ncu_gqa.py
for who in static counter; do
  stamp "ncu full $who"
  lib=$PWD/.carry/lib/libflashcore.so; [ $who = counter ] && lib=$PWD/.carry-exp/libflashcore.so
  FLASHCORE_LIB=$lib timeout 200 ncu --clock-control none --set full --import-source no -k regex:fc_attention_kernel --launch-skip 2 -c 1 -f -o $OUT/ncu-$who python3 $SCRIPT $who > $OUT/ncu-$who-run.txt 2>&1
  ncu --import $OUT/ncu-$who.ncu-rep --page details --print-details all > $OUT/ncu-$who-details.txt 2>&1
  ncu --import $OUT/ncu-$who.ncu-rep --page source --print-source sass --csv > $OUT/ncu-$who-sass.csv 2>/dev/null
  python3 tools/ncu_stalls.py --top 40 $OUT/ncu-$who-sass.csv > $OUT/ncu-$who-stalls.txt 2>&1
  python3 tools/ncu_stalls.py --by-count $OUT/ncu-$who-sass.csv > $OUT/ncu-$who-bycount.txt 2>&1
done
python3 tools/ncu_stalls.py --mix $OUT/ncu-static-sass.csv $OUT/ncu-counter-sass.csv > $OUT/ncu-mix.txt 2>&1
stamp end
cd $OUT && rm -f *.ncu-rep && mkdir -p logs && mv *.txt *.csv logs/ && cp logs/gpu.txt . && tar czf logs.tgz logs && rm -rf logs
