#!/bin/bash
# session 31, call 6 (H100): Nsight Compute's full set on FP8 head_dim 64 at 16k keys, causal and not,
# ours against FA3 fp8 (ours 0.84x FA3 causal, 0.90-0.93x not: run5)
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
date -u +"%H:%M:%S start" >> $OUT/gpu.txt
NCU_PRECOMPILE=0 NCU_SHAPES="1 32 32 16384 64 1 e4m3;1 32 32 16384 64 0 e4m3" tools/gpu-host.sh ncu-pair > $OUT/ncu-pair.log 2>&1
date -u +"%H:%M:%S end" >> $OUT/gpu.txt
