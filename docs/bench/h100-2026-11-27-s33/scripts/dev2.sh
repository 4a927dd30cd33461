#!/bin/bash
# session 33, call 2 (H100): the gpu suite's sm90 awkward shapes on the two three-consumer schedules
# (16-bit head_dim 64 causal grids now on the counter); fcjit tune of head_dim 64 causal 2k-4k; the
# 2k rows' candidates in alternation against main's selection (main's library)
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "tune d64 causal 2k-4k"
timeout 150 .carry/bin/fcjit --db $FC_TUNING_DB tune --spec docs/bench/h100-2026-11-27-s33/tune-d64-causal-2k-4k.yaml --iters 30 --margin 1 > $OUT/tune.log 2>&1; echo "rc $?" >> $OUT/tune.log
.carry/bin/fcjit --db $FC_TUNING_DB cache export --winners - > $OUT/winners.tsv 2>> $OUT/tune.log
AB="python3 tools/ab_rounds.py --baseline-lib $PWD/.carry-base/libflashcore.so --baseline-db /tmp/fcdb/base.db"
for v in m192n128s2w16p1 m128n128s2w12p1 m128n128s2w12p0; do
  stamp "ab d64 causal 2k, ours $v, main's selection"
  FC_TUNING_DB=/tmp/fcdb/ab.db timeout 60 $AB --dtypes f16,bf16 --dims 64 --causal yes --seqlens 2048 --rounds 7 --ours-variant sm90:$v --json $OUT/j/ab-2k-$v.json > $OUT/ab-2k-$v.log 2>&1
done
stamp "gpu suite: sm90 awkward shapes, three consumers"
for s in 3 6; do FC_GPU_TESTS='test_sm90_kernel_matches_reference_over_awkward_shapes' FC_GPU_SM90_SCHEDULE=$s timeout 130 .carry/bin/test_gpu > $OUT/gpu-awkward-$s.log 2>&1; echo "rc $?" >> $OUT/gpu-awkward-$s.log; done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j winners.tsv && rm -rf logs j
