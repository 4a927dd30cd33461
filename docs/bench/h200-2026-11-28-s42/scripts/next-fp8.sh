#!/bin/bash
# Prepared in session 42 for a later session (not run: no device time left); PERF_NOTES v42.5's
# next (1). FP8 head_dim 128 B4 H16 S4096 (the ncu pair's shape) with exp-stamps.patch applied to a
# copy of the templates: do the two consumer warpgroups' softmaxes run at the same time?
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry-t/lib/libflashcore.so PYTHONPATH=$PWD/python:$PWD/tools FC_QUICK_FIRST_CALL=0
S=docs/bench/h200-2026-11-28-s42/scripts
rm -rf /tmp/st && mkdir -p /tmp/st && cp -r kernel_templates /tmp/st/ && (cd /tmp/st && patch -p1 < $OLDPWD/$S/exp-stamps.patch) > $OUT/patch.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
timeout 120 python3 $S/exp_stamps.py run /tmp/st/kernel_templates 4 16 4096 128 > $OUT/stamps.log 2>&1
python3 $S/exp_stamps.py read $OUT/stamps.log > $OUT/overlap.txt 2>&1
cat $OUT/overlap.txt
