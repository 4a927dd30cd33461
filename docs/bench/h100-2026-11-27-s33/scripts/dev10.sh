#!/bin/bash
# session 33, call 10 (H100): the final library (aea592a) side by side: the gpu suite, one process a
# test (tools/gpu-host.sh gpu-suite-split: precompile, then each test, sm90's schedules apart), the
# package's GPU pytest suite, and racecheck on a scheduled 16-bit head_dim 64 grid
export FC_QUICK_FIRST_CALL=0
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
stamp "racecheck"
LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FC_FORCE_VARIANT=sm90:m192n128s2w16p1 timeout 90 $(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer) --tool racecheck --error-exitcode 9 .carry/bin/fcjit --no-cache run --batch 2 --heads 8 --seqlen 3000 --head-dim 64 --causal --dtype bf16 --iters 1 --warmup 0 --seed 5 > $OUT/san-racecheck.log 2>&1; echo "rc $?" >> $OUT/san-racecheck.log
stamp "gpu-suite-split + python-gpu"
mkdir -p $OUT/split
(OUT=$OUT/split timeout 470 tools/gpu-host.sh gpu-suite-split > $OUT/split.log 2>&1; echo "rc $?" >> $OUT/split.log) &
(export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python; mkdir -m 700 -p /tmp/pydb; FC_TUNING_DB=/tmp/pydb/k.db timeout 470 python3 -m pytest -p no:cacheprovider -rs -q tests/python/test_gpu.py > $OUT/python-gpu.log 2>&1; echo "rc $?" >> $OUT/python-gpu.log) &
wait
stamp end
cd $OUT && cp split/.steps steps.txt 2>/dev/null; mkdir -p logs && mv *.log steps.txt split logs/ 2>/dev/null; tar czf logs.tgz logs && rm -rf logs
