#!/bin/bash
# session 33, call 6 (H100): the GQA prefill row (B4 Hq32 Hkv8 S4096 head_dim 128 causal bf16) under
# Nsight Compute, the third launch of each: the landed library (static pairs), .carry-exp (the
# counter) and FA3; launch, occupancy, throughput, memory (L2 hit rate, DRAM bytes), warp states
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
S="--section LaunchStats --section Occupancy --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --metrics sm__cycles_active.avg,sm__cycles_active.min,sm__cycles_active.max,sm__cycles_elapsed.max,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum"
SCRIPT=docs/bench/h100-2026-11-27-s33/scripts/ncu_gqa.py
for who in static counter fa3; do
  stamp "ncu $who"
  lib=$PWD/.carry/lib/libflashcore.so; [ $who = counter ] && lib=$PWD/.carry-exp/libflashcore.so
  k=regex:fc_attention_kernel; [ $who = fa3 ] && k=regex:device_kernel
  FLASHCORE_LIB=$lib timeout 150 ncu --clock-control none $S -k $k --launch-skip 2 -c 1 python3 $SCRIPT $who > $OUT/ncu-$who.txt 2>&1
done
stamp end
cd $OUT && mkdir -p logs && mv *.txt logs/ && cp logs/gpu.txt . && tar czf logs.tgz logs && rm -rf logs
