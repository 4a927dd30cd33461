#!/bin/bash
# session 39, call 9 (the same study): Nsight Compute's per-reason stall ratios (smsp__average_warps_issue_stalled_*)
# on one launch of head_dim 128 causal B32 H16 S512 bf16 (`fcjit run`, the same forced kernel),
# the head's templates (this library's own) against v39.5's (.carry-tpl/v6): is the loss the
# instruction fetch (two copies of the masked step hot at once) or the narrow step's issue?
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 FC_QUICK_FIRST_CALL=0
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
shape="--variant sm90:m128n128s2w12p1 --batch 32 --heads-q 16 --heads-kv 16 --seqlen-q 512 --seqlen-k 512 --head-dim 128 --causal --dtype bf16 --iters 5 --warmup 2 --check-rows 4"
for side in head v6; do
  stamp "ncu $side"
  tpl=""; [ $side = v6 ] && tpl="FC_TEMPLATE_DIR=$PWD/.carry-tpl/v6/kernel_templates"
  true
  env $tpl timeout 120 ncu --launch-skip 3 --launch-count 1 --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio,sm__cycles_elapsed.max,smsp__inst_executed.sum .carry-t/bin/fcjit --no-cache run $shape > $OUT/ncu-$side.log 2>&1
done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs && rm -rf logs
