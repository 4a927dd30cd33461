#!/bin/bash
# Nsight Compute's full set on ours and FA3 (tools/gpu-host.sh's ncu_pair, without its precompile step)
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
FCJIT=$PWD/.carry/bin/fcjit
for sh in "4 16 16 4096 128 0" "2 16 16 8192 128 1"; do
  read -r b hq hkv s d c <<< "$sh"
  tag="b${b}h${hq}-${hkv}s${s}d${d}c${c}"
  date -u >> $OUT/gpu.txt
  timeout 120 ncu --clock-control none --set full --import-source no -k regex:fc_attention_kernel -c 1 -f -o "$OUT/ncu-ours-$tag" \
    $FCJIT run --batch $b --heads-q $hq --heads-kv $hkv --seqlen $s --head-dim $d $([ "$c" = 1 ] && echo --causal) --dtype bf16 --iters 1 --warmup 0 --check-rows 2 > $OUT/ncu-run-$tag.log 2>&1
  timeout 120 ncu --clock-control none --set full --import-source no -k regex:device_kernel -c 1 -f -o "$OUT/ncu-fa3-$tag" python3 -c "
import torch, fa3_fwd_interface
q = torch.randn($b, $s, $hq, $d, device='cuda', dtype=torch.bfloat16)
k, v = (torch.randn($b, $s, $hkv, $d, device='cuda', dtype=torch.bfloat16) for _ in range(2))
fa3_fwd_interface.flash_attn_func(q, k, v, causal=bool($c))
torch.cuda.synchronize()" >> $OUT/ncu-run-$tag.log 2>&1
  for who in ours fa3; do
    ncu --import "$OUT/ncu-$who-$tag.ncu-rep" --page details --print-details all > "$OUT/ncu-$who-$tag.txt"
    ncu --import "$OUT/ncu-$who-$tag.ncu-rep" --page source --print-source sass --csv > "$OUT/ncu-$who-$tag-sass.csv"
    python3 tools/ncu_stalls.py --top 30 "$OUT/ncu-$who-$tag-sass.csv" > "$OUT/ncu-$who-$tag-stalls.txt"
  done
  python3 tools/ncu_stalls.py --mix "$OUT/ncu-ours-$tag-sass.csv" "$OUT/ncu-fa3-$tag-sass.csv" > "$OUT/ncu-mix-$tag.txt"
  (cd $OUT && tar czf ncu-$tag.tgz ncu-*-$tag.txt ncu-*-$tag-sass.csv ncu-*-$tag-stalls.txt ncu-run-$tag.log && rm -f ncu-*-$tag.ncu-rep ncu-*-$tag-sass.csv ncu-*-$tag-stalls.txt ncu-ours-$tag.txt ncu-fa3-$tag.txt ncu-run-$tag.log)
done
date -u >> $OUT/gpu.txt
