#!/bin/bash
# session 33, call 1 (H100): 16-bit head_dim 64 causal persistent grids taking their row blocks from a
# counter (SCHEDULED, K/V rows of 128 bytes as FP8 head_dim 128's) against main's static pairs: this
# library (.carry) against main's (.carry-base) in alternation on the same tensors; correctness by
# BENCH.md's rule (check.py) and the gpu suite's awkward shapes on the three-consumer schedules;
# compute-sanitizer on a multi-round scheduled grid
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
AB="python3 tools/ab_rounds.py --baseline-lib $PWD/.carry-base/libflashcore.so --baseline-db /tmp/fcdb/base.db"
stamp "ab d64 causal 4k-16k (selected: three consumers), d128 causal the noise rows"
timeout 150 $AB --dtypes f16,bf16 --dims 64,128 --causal yes --seqlens 4096,8192,16384 --rounds 5 --noise-kernels 'd128' --json $OUT/j/ab-sel.json > $OUT/ab-sel.log 2>&1
stamp "ab d64 causal 1k-2k, both m192n128 turns"
timeout 70 $AB --dtypes f16,bf16 --dims 64 --causal yes --seqlens 1024,2048 --rounds 5 --ours-variant sm90:m192n128s2w16p1 --baseline-variant sm90:m192n128s2w16p1 --json $OUT/j/ab-short-m192.json > $OUT/ab-short-m192.log 2>&1
stamp "ab d64 causal 1k-4k, ours m192n128 turns scheduled, main's selection"
timeout 70 $AB --dtypes f16,bf16 --dims 64 --causal yes --seqlens 1024,2048,4096 --rounds 5 --ours-variant sm90:m192n128s2w16p1 --json $OUT/j/ab-short-vs-sel.json > $OUT/ab-short-vs-sel.log 2>&1
stamp "check d64 forced three consumers"
timeout 80 python3 tools/check.py --matrix base --head-dims 64 --repeats 2 --families sm90:m192n128s2w16p1,sm90:m192n128s2w16p0 > $OUT/check-d64-m192.log 2>&1; echo "rc $?" >> $OUT/check-d64-m192.log
stamp "check fp8 d64,128"
timeout 60 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 64,128 --repeats 2 > $OUT/check-fp8.log 2>&1; echo "rc $?" >> $OUT/check-fp8.log
stamp "gpu suite: scheduled FP8, awkward shapes three consumers"
for s in 3 6; do FC_GPU_TESTS='*awkward*' FC_GPU_SM90_SCHEDULE=$s timeout 70 .carry/bin/test_gpu > $OUT/gpu-awkward-$s.log 2>&1; echo "rc $?" >> $OUT/gpu-awkward-$s.log; done
FC_GPU_TESTS='*scheduled*' timeout 60 .carry/bin/test_gpu > $OUT/gpu-scheduled.log 2>&1; echo "rc $?" >> $OUT/gpu-scheduled.log
stamp "sanitizer"
for tool in memcheck synccheck; do
  FC_FORCE_VARIANT=sm90:m192n128s2w16p1 timeout 45 $(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer) --tool $tool --error-exitcode 9 .carry/bin/fcjit --no-cache run --batch 2 --heads 8 --seqlen 3000 --head-dim 64 --causal --dtype bf16 --iters 2 --warmup 1 --seed 5 > $OUT/san-$tool.log 2>&1; echo "rc $?" >> $OUT/san-$tool.log
done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
