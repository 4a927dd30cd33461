#!/bin/bash
# session 39, call 3 (v39.3): three consumers taking turns wait for V(t - 1) inside the turn (.carry-t:
# this tree's templates built in) against the head's templates (.carry-tpl/head through FC_TEMPLATE_DIR),
# head_dim 64 rows in alternation on the same tensors (outputs compared bit for bit); then BENCH.md's
# checks of the two changed kernels (the selection and the turns forced) and compute-sanitizer.
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry-t/lib/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
HEAD_TPL=$PWD/.carry-tpl/head/kernel_templates
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "ab 16-bit head_dim 64"
timeout 150 python3 tools/ab_rounds.py --baseline-templates $HEAD_TPL --baseline-db /tmp/fcdb/b1.db --labels sweep --dtypes bf16,f16 --dims 64 --causal both --rounds 5 --json $OUT/j/ab-16.json > $OUT/ab-16.log 2>&1
stamp "ab fp8 head_dim 64"
timeout 90 python3 tools/ab_rounds.py --baseline-templates $HEAD_TPL --baseline-db /tmp/fcdb/b2.db --dtypes e4m3 --dims 64 --causal both --seqlens 1024,4096,16384 --rounds 5 --json $OUT/j/ab-fp8.json > $OUT/ab-fp8.log 2>&1
stamp "checks"
timeout 80 python3 tools/check.py --matrix base --head-dims 64 --repeats 2 > $OUT/check-d64.log 2>&1
timeout 80 python3 tools/check.py --matrix base --head-dims 64 --repeats 2 --families sm90:m192n128s2w16p1 > $OUT/check-d64-turns.log 2>&1
timeout 60 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 64 --repeats 2 > $OUT/check-fp8.log 2>&1
stamp "sanitizers"
for tool in racecheck synccheck; do
  v="sm90:m192n128s2w16p1"
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 .carry-t/bin/fcjit --no-cache run --variant $v --batch 1 --heads-q 4 --heads-kv 1 --seqlen-q 700 --seqlen-k 700 --head-dim 64 --causal --dtype bf16 --iters 1 --warmup 0 --check-rows 8 > /tmp/san.log 2>&1
  echo "$tool $v: exit $? $(grep SUMMARY /tmp/san.log)" >> $OUT/sanitize.log
done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
