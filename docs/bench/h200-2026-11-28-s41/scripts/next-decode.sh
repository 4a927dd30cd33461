#!/bin/bash
# Prepared in session 41 for a later H200 session (not run: no device time left). PERF_NOTES v41.3:
# decode B8 Hq32 Hkv8 Sk32768 head_dim 128 reads K and V at 87-88% of the copy figure where cuDNN
# reads 98%. The selector gives it to the sm90 kernel, GQA-packed (sm90_bf16_d128_gqa_m64n128s2w8: 64
# CTAs, B8 x Hkv8, no split: the decode kernel leaves packed rows filling 2/5 of the SMs or more to
# it), so 64 of the 132 SMs read the cache. Each form timed as do_bench times (fcjit run --rep-ms),
# three rounds in turn: the selector's, then the decode kernel forced with 2-8 splits, two or three
# stages, and the 64-key tiles the paged cache keeps (two CTAs an SM).
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb
FC=".carry-t/bin/fcjit --db /tmp/fcdb/k.db --json"
SHAPE="--batch 8 --heads-q 32 --heads-kv 8 --seqlen-q 1 --seqlen-k 32768 --head-dim 128 --dtype bf16 --check-rows 16"
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
for round in 1 2 3; do
  for v in "" decode:n128w8s2k2 decode:n128w8s3k2 decode:n128w8s2k4 decode:n128w8s3k4 decode:n128w8s2k8 decode:n64w4s3k4 decode:n64w4s3k8; do
    $FC run $SHAPE ${v:+--variant $v} --rep-ms 100 --warmup-ms 25 | sed "s/^{/{\"round\": $round, \"forced\": \"$v\", /" >> $OUT/decode.jsonl 2>> $OUT/decode.err
  done
done
