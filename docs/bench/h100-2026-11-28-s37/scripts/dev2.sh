#!/bin/bash
# session 37, call 2 (v37.2): the quick first call's kernel in its quick form (the variant's `quick`:
# 32-key tiles, P V 64 columns a WGMMA, O by 4-byte stores; .carry, this tree) against the landed library
# (.carry-base, 1129876) with its own first_call.py; NVRTC alone on the old (64-key) and new quick sources
# on the device's host; the quick kernel's correctness (check.py forced and on first calls, the gpu suite's
# test, memcheck on forced quick runs).
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/tools
export FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so CUDA_CACHE_DISABLE=1 FC_NVRTC_LIBRARY=/usr/local/cuda/lib64/libnvrtc.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
lscpu | grep -E "Model name|^CPU\(s\)" >> $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "NVRTC alone: old (64-key plain) and new (quick form) quick sources, twice in turn"
for r in 1 2; do
  timeout 40 python3 tools/compile_time.py --repeats 3 .carry-src/old/*.cu >> $OUT/compile-time-old.log 2>&1
  timeout 40 python3 tools/compile_time.py --repeats 3 .carry-src/new/*.cu >> $OUT/compile-time-new.log 2>&1
done
stamp "first_call.py --rounds 3 (new)"
timeout 130 python3 tools/first_call.py --rounds 3 --json $OUT/j/first-call-new.json > $OUT/first-call-new.log 2>&1
stamp "first_call.py --rounds 3 (landed library, its own script)"
FLASHCORE_LIB=$PWD/.carry-base/libflashcore.so LD_LIBRARY_PATH=$PWD/.carry-base:$PWD/.carry/lib:/usr/local/cuda/lib64 timeout 110 python3 .carry-src/first_call_old.py --rounds 3 --json $OUT/j/first-call-base.json > $OUT/first-call-base.log 2>&1
stamp "check.py forced quick form, base matrix, every head_dim"
timeout 80 python3 tools/check.py --matrix base --repeats 1 --families sm90:m64n32s2w4p0g0q1 --json $OUT/j/check-forced.json > $OUT/check-forced.log 2>&1; echo "rc $?" >> $OUT/check-forced.log
stamp "check.py --quick-first-call base d128,256"
timeout 100 python3 tools/check.py --quick-first-call --matrix base --head-dims 128,256 --repeats 1 --json $OUT/j/check-quick.json > $OUT/check-quick.log 2>&1; echo "rc $?" >> $OUT/check-quick.log
stamp "gpu suite: test_quick_first_call"
FC_GPU_TESTS=test_quick_first_call timeout 40 .carry/bin/test_gpu > $OUT/gpu-quick.log 2>&1; echo "rc $?" >> $OUT/gpu-quick.log
stamp "memcheck forced quick: d256, d128 varlen window softcap"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
FC_FORCE_VARIANT=sm90:m64n32s2w4p0g0q1 timeout 40 $SAN --tool memcheck --error-exitcode 9 .carry/bin/fcjit --db /tmp/fcdb/k.db run --dtype bf16 --head-dim 256 --batch 2 --heads-q 8 --heads-kv 2 --seqlen 1000 --causal --iters 1 --warmup 0 --seed 7 > $OUT/memcheck.log 2>&1; echo "rc $?" >> $OUT/memcheck.log
FC_FORCE_VARIANT=sm90:m64n32s2w4p0g0q1 timeout 40 $SAN --tool memcheck --error-exitcode 9 .carry/bin/fcjit --db /tmp/fcdb/k.db run --dtype f16 --head-dim 128 --varlen 300,1,77 --heads-q 4 --heads-kv 2 --window-left 100 --window-right 0 --softcap 30 --iters 1 --warmup 0 --seed 7 >> $OUT/memcheck.log 2>&1; echo "rc $?" >> $OUT/memcheck.log
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
