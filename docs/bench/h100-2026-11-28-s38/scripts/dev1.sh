#!/bin/bash
# session 38, call 1 (study, no change): Nsight Compute's full set with per-instruction stall samples on
# one launch (the third of a process) of ours and the row's best peer, same inputs:
#   fp8   FP8 head_dim 128 B4 H16 S4096 without a mask: ours against cuDNN fp8 (v36.8's pair, now with
#         the SASS tables: where our stall "wait" of 1.46 cycles an instruction sits)
#   d64c  bf16 head_dim 64 causal B4 H32 S4096 (the sweep's weakest rows): ours against FA3
#   gqa   bf16 GQA B4 Hq32 Hkv8 S4096 head_dim 128 causal: ours against FA3
export LD_LIBRARY_PATH=$PWD/.carry-s/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry-s/lib/libflashcore.so PYTHONPATH=$PWD/python:$PWD/tools FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
S=docs/bench/h100-2026-11-28-s38/scripts
prof() {   # tag kernel-regex command...
    local tag=$1 re=$2; shift 2
    stamp "ncu $tag"
    timeout 150 ncu --clock-control none --set full --import-source no -k regex:"$re" --launch-skip 2 -c 1 -f -o $OUT/$tag "$@" > $OUT/$tag-run.log 2>&1
    ncu --import $OUT/$tag.ncu-rep --page details --print-details all > $OUT/$tag.txt 2>&1
    ncu --import $OUT/$tag.ncu-rep --page source --print-source sass --csv > $OUT/$tag-sass.csv 2>&1
    python3 tools/ncu_stalls.py --top 40 $OUT/$tag-sass.csv > $OUT/$tag-stalls.txt 2>&1
}
stamp "precompile (so no compile runs under ncu)"
timeout 100 .carry-s/bin/fcjit --db /tmp/fcdb/k.db precompile --arch sm_90a > $OUT/precompile.log 2>&1
prof fp8-ours fc_attention_kernel python3 docs/bench/h100-2026-11-28-s36/scripts/fp8_once.py ours 4 16 4096 128
prof fp8-cudnn 'sdpa|fmha|fprop|cudnn|fort|attn|flash' python3 docs/bench/h100-2026-11-28-s36/scripts/fp8_once.py cudnn 4 16 4096 128
prof d64c-ours fc_attention_kernel python3 $S/once16.py ours 4 32 32 4096 64 1
prof d64c-fa3 device_kernel python3 $S/once16.py fa3 4 32 32 4096 64 1
prof gqa-ours fc_attention_kernel python3 $S/once16.py ours 4 32 8 4096 128 1
prof gqa-fa3 device_kernel python3 $S/once16.py fa3 4 32 8 4096 128 1
python3 tools/ncu_stalls.py --mix $OUT/fp8-ours-sass.csv $OUT/fp8-cudnn-sass.csv > $OUT/fp8-mix.txt 2>&1
python3 tools/ncu_stalls.py --mix $OUT/d64c-ours-sass.csv $OUT/d64c-fa3-sass.csv > $OUT/d64c-mix.txt 2>&1
python3 tools/ncu_stalls.py --mix $OUT/gqa-ours-sass.csv $OUT/gqa-fa3-sass.csv > $OUT/gqa-mix.txt 2>&1
stamp end
cd $OUT && rm -f *.ncu-rep && mkdir -p logs && mv *.log *.txt logs/ 2>/dev/null; mv logs/gpu.txt .; tar czf logs.tgz logs && tar czf sass.tgz *.csv && rm -rf logs *.csv
