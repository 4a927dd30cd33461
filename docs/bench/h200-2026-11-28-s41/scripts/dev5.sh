#!/bin/bash
# session 41, call 5: the new check inputs (src/check.c: drawn in blocks on threads) and `fcjit run`'s
# do_bench timing on the GPU: gpu-suite tests side by side (one process each, cut at 270 s), and
# `fcjit run` with --rep-ms / --warmup-ms against its counted default.
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 FC_SOURCE_ROOT=$PWD FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb*; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
stamp "gpu suite"
for t in test_sm90_kernel_matches_reference_over_awkward_shapes test_decode_kernel_matches_reference_over_awkward_shapes \
         test_varlen_matches_reference_in_every_family test_paged_matches_reference_in_every_family \
         test_fp8_attention_matches_reference_as_selected test_fp8_kv_matches_reference_as_selected \
         test_bit_identical_over_repeated_runs test_misuse_on_a_real_context_launches_nothing \
         test_reference_kernel_matches_reference_over_awkward_shapes test_sm80_kernel_matches_reference_over_awkward_shapes; do
  (mkdir -m 700 -p /tmp/fcdb-$t; FC_TUNING_DB=/tmp/fcdb-$t/k.db FC_GPU_TESTS=$t timeout 270 .carry-t/bin/test_gpu > $OUT/gpu-$t.log 2>&1; echo "rc $?" >> $OUT/gpu-$t.log) &
done
sleep 5
FC=".carry-t/bin/fcjit --db /tmp/fcdb/k.db"
for r in 1 2; do
  $FC --json run --batch 4 --heads 16 --seqlen 4096 --head-dim 128 --causal --dtype bf16 --check-rows 32 >> $OUT/run-counted.log 2>&1
  $FC --json run --batch 4 --heads 16 --seqlen 4096 --head-dim 128 --causal --dtype bf16 --check-rows 32 --rep-ms 100 --warmup-ms 25 >> $OUT/run-rep.log 2>&1
done
$FC run --batch 4 --heads 16 --seqlen 4096 --head-dim 128 --causal --dtype bf16 --check-rows 32 --rep-ms 100 --warmup-ms 25 >> $OUT/run-rep.log 2>&1
wait
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs && rm -rf logs
