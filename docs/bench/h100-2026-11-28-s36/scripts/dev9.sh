#!/bin/bash
# session 36, call 9 (study, no change): Nsight Compute on cuDNN's fp8 attention (the faster fp8 peer at
# head_dim 128 without a mask: 0.90x at 4k keys in v30.10) beside ours, B4 H16 S4096 head_dim 128: its
# kernels' launch statistics (grid, block, registers, shared memory), then the full set on one launch each
# and the two SASS opcode mixes (tools/ncu_stalls.py --mix). For the next session's design.
export LD_LIBRARY_PATH=$PWD/.carry-lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry-lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
python3 -m pip install --no-index --no-deps .peers/*/*.whl > $OUT/pip.log 2>&1
ONCE=docs/bench/h100-2026-11-28-s36/scripts/fp8_once.py
stamp "launch stats, every kernel of the cuDNN script"
timeout 120 ncu --clock-control none --section LaunchStats --section Occupancy --print-summary per-kernel python3 $ONCE cudnn 4 16 4096 128 > $OUT/ncu-cudnn-launch.log 2>&1
stamp "full set: ours, cuDNN"
timeout 120 ncu --clock-control none --set full --import-source no -k regex:fc_attention_kernel -c 1 -f -o $OUT/ncu-ours python3 $ONCE ours 4 16 4096 128 > $OUT/ncu-ours-run.log 2>&1
timeout 120 ncu --clock-control none --set full --import-source no -k regex:'sdpa|fmha|fprop|cudnn|fort|attn|flash' -c 1 -f -o $OUT/ncu-cudnn python3 $ONCE cudnn 4 16 4096 128 > $OUT/ncu-cudnn-run.log 2>&1
for who in ours cudnn; do
  [ -f $OUT/ncu-$who.ncu-rep ] || continue
  ncu --import $OUT/ncu-$who.ncu-rep --page details --print-details all > $OUT/ncu-$who.txt 2>&1
  ncu --import $OUT/ncu-$who.ncu-rep --page source --print-source sass --csv > $OUT/ncu-$who-sass.csv 2>&1
done
python3 tools/ncu_stalls.py --mix $OUT/ncu-ours-sass.csv $OUT/ncu-cudnn-sass.csv > $OUT/ncu-mix.txt 2>&1
stamp end
cd $OUT && rm -f *.ncu-rep && mkdir -p logs && mv *.log ncu-*.txt logs/ && tar czf logs.tgz logs && tar czf sass.tgz *.csv && rm -rf logs *.csv
