#!/bin/bash
# session 42, call 1 (H200; the library as landed, 05b232e's build in .carry-t; .peers/cudnn only: FA3's
# wheel does not fit the device tool's 64 MiB beside the tree, the library and the gpu suite):
#   1. the gpu suite's paged test again after e1cfc65 (assert_bit_identical's copy sized from the run)
#   2. decode_sweep.py (same process and tensors as cuDNN via SDPA): the selector's choice against the
#      decode kernel forced with its splits chosen, 2-4 splits, three stages, the paged cache's 64-key
#      tiles (two CTAs an SM), on B8 Sk32768 (PERF_NOTES v41.3: 87% of copy on the GQA-packed sm90
#      kernel, 0.89x cuDNN), B4 Sk32768, B64 Sk8192 and B8 Sq16 Sk16000 causal; bf16 twice, f16 once
#   3. first_call.py --rounds 2 (issue 16's cold-compile bar, not measured in session 41)
#   4. ncu --set full, one launch each: FP8 head_dim 128 B4 H16 S4096, ours against cuDNN fp8, with the
#      SASS source pages (PERF_NOTES v39's next (1): the exponentials' operands, instruction by instruction)
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry-t/lib/libflashcore.so PYTHONPATH=$PWD/python:$PWD/tools FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb*; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version,memory.total --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "gpu suite: paged"
FC_SOURCE_ROOT=$PWD FC_GPU_TESTS=test_paged_matches_reference_in_every_family timeout 150 .carry-t/bin/test_gpu > $OUT/gpu-paged.log 2>&1; echo "rc $?" >> $OUT/gpu-paged.log
C="default decode decode:k2 decode:k3 decode:k4 decode:s3 decode:n64w4s3 decode:n64w4s3k4"
SH="--shapes 8,32,8,1,32768 4,32,8,1,32768 64,32,8,1,8192 8,32,8,16,16000,causal"
for r in 1 2; do
  stamp "decode_sweep bf16 $r"
  timeout 100 python3 tools/decode_sweep.py $C $SH --dtype bf16 --json $OUT/j/decode-bf16-$r.json > $OUT/decode-bf16-$r.log 2>&1; echo "rc $?" >> $OUT/decode-bf16-$r.log
done
stamp "decode_sweep f16"
timeout 100 python3 tools/decode_sweep.py $C $SH --dtype f16 --json $OUT/j/decode-f16.json > $OUT/decode-f16.log 2>&1; echo "rc $?" >> $OUT/decode-f16.log
stamp "first_call"
CUDA_CACHE_DISABLE=1 timeout 120 python3 tools/first_call.py --rounds 2 --json $OUT/j/first-call.json > $OUT/first-call.log 2>&1; echo "rc $?" >> $OUT/first-call.log
prof() {   # tag kernel-regex command...
    local tag=$1 re=$2; shift 2
    stamp "ncu $tag"
    timeout 120 ncu --clock-control none --set full --import-source no -k regex:"$re" --launch-skip 2 -c 1 -f -o $OUT/$tag "$@" > $OUT/$tag-run.log 2>&1
    ncu --import $OUT/$tag.ncu-rep --page details --print-details all > $OUT/$tag.txt 2>&1
    ncu --import $OUT/$tag.ncu-rep --page source --print-source sass --csv > $OUT/$tag-sass.csv 2>&1
    python3 tools/ncu_stalls.py --top 40 $OUT/$tag-sass.csv > $OUT/$tag-stalls.txt 2>&1
}
F=docs/bench/h100-2026-11-28-s36/scripts/fp8_once.py
if [ $SECONDS -lt 420 ]; then
  prof fp8-ours fc_attention_kernel python3 $F ours 4 16 4096 128
  prof fp8-cudnn 'sdpa|fmha|fprop|cudnn|fort|attn|flash' python3 $F cudnn 4 16 4096 128
  python3 tools/ncu_stalls.py --mix $OUT/fp8-ours-sass.csv $OUT/fp8-cudnn-sass.csv > $OUT/fp8-mix.txt 2>&1
fi
stamp end
cd $OUT && rm -f *.ncu-rep && mkdir -p logs && mv *.log *.txt logs/ 2>/dev/null; mv logs/gpu.txt .; tar czf logs.tgz logs j && mkdir -p peer && mv fp8-cudnn-sass.csv peer/ 2>/dev/null; tar czf sass.tgz *.csv 2>/dev/null; rm -rf logs j *.csv
