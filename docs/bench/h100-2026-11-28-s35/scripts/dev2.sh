#!/bin/bash
# session 35, call 2 (the same with the later takes offset by the static blocks, which call 1 lacked): the hybrid grid of PERF_NOTES v34.3 (hybrid-grid-experiment.patch on acdc61c,
# built into .carry; never run before): 16-bit head_dim 128 causal on the counter, every (batch, head)
# but twice the tail's taken statically as pairs first. Correctness of its kernels (check.py on
# head_dim 128, the gpu suite's persistent and scheduled-grid tests), then against the landed library
# (.carry-base, acdc61c) in alternation on the head_dim 128 causal sweep rows and the GQA rows.
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
pip install --no-index --no-deps .peers/*/*.whl > $OUT/pip.log 2>&1
stamp "precompile"
timeout 120 .carry/bin/fcjit --db /tmp/fcdb/k.db precompile --arch sm_90a > $OUT/precompile.log 2>&1; echo "rc $?" >> $OUT/precompile.log
stamp "explain (the hybrid's plan)"
for s in "--batch 4 --heads-q 32 --heads-kv 8 --seqlen 4096" "--batch 1 --heads-q 64 --heads-kv 8 --seqlen 8192" "--batch 8 --heads 16 --seqlen 2048"; do
  .carry/bin/fcjit --db /tmp/fcdb/k.db explain $s --head-dim 128 --causal --dtype bf16 --json >> $OUT/explain.log 2>&1; done
stamp "ab d128 causal sweep+gqa, 9 alternations"
timeout 200 python3 tools/ab_rounds.py --baseline-lib $PWD/.carry-base/libflashcore.so --baseline-db /tmp/fcdb/base.db --labels sweep,gqa --dtypes f16,bf16 --dims 128 --causal yes --rounds 9 --json $OUT/j/ab.json > $OUT/ab.log 2>&1
stamp "check.py base d128"
timeout 100 python3 tools/check.py --matrix base --head-dims 128 --repeats 2 --json $OUT/j/check-base.json > $OUT/check-base.log 2>&1; echo "rc $?" >> $OUT/check-base.log
stamp "gpu suite: persistent and scheduled grids"
for t in test_sm90_persistent_grid_loops_over_row_blocks test_sm90_scheduled_grids_on_concurrent_streams test_sm90_scheduled_grids_without_a_counter; do
  FC_GPU_TESTS=$t timeout 150 .carry/bin/test_gpu > $OUT/gpu-$t.log 2>&1; echo "rc $?" >> $OUT/gpu-$t.log; done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
