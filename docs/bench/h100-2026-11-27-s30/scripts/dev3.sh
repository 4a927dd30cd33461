#!/bin/bash
# session 30, call 3: Nsight Compute's full set on FP8 attention, ours (the final library) and FA3 fp8,
# head_dim 256 B4 H8 S4096 and head_dim 128 B4 H16 S4096, without a mask (per-tensor descales of 1 for FA3)
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
FCJIT=$PWD/.carry/bin/fcjit
for sh in "4 8 4096 256" "4 16 4096 128"; do
  read -r b h s d <<< "$sh"
  tag="fp8-b${b}h${h}s${s}d${d}"
  date -u +"%H:%M:%S $tag" >> $OUT/gpu.txt
  $FCJIT run --batch $b --heads $h --seqlen $s --head-dim $d --dtype e4m3 --iters 5 --warmup 1 --check-rows 2 > $OUT/run-$tag.log 2>&1
  timeout 150 ncu --clock-control none --set full --import-source no -k regex:fc_attention_kernel -c 1 -f -o "$OUT/ncu-ours-$tag" \
    $FCJIT run --batch $b --heads $h --seqlen $s --head-dim $d --dtype e4m3 --iters 1 --warmup 0 --check-rows 2 >> $OUT/run-$tag.log 2>&1
  timeout 150 ncu --clock-control none --set full --import-source no -k regex:device_kernel -c 1 -f -o "$OUT/ncu-fa3-$tag" python3 -c "
import torch, fa3_fwd_interface
torch.manual_seed(0)
q, k, v = (torch.randn($b, $s, $h, $d, device='cuda').clamp(-6, 6).to(torch.float8_e4m3fn) for _ in range(3))
one = torch.ones($b, $h, device='cuda', dtype=torch.float32)
fa3_fwd_interface.flash_attn_func(q, k, v, causal=False, q_descale=one, k_descale=one, v_descale=one)
torch.cuda.synchronize()" >> $OUT/run-$tag.log 2>&1
  for who in ours fa3; do
    ncu --import "$OUT/ncu-$who-$tag.ncu-rep" --page details --print-details all > "$OUT/ncu-$who-$tag.txt"
    ncu --import "$OUT/ncu-$who-$tag.ncu-rep" --page source --print-source sass --csv > "$OUT/ncu-$who-$tag-sass.csv"
    python3 tools/ncu_stalls.py --top 30 "$OUT/ncu-$who-$tag-sass.csv" > "$OUT/ncu-$who-$tag-stalls.txt"
  done
  python3 tools/ncu_stalls.py --mix "$OUT/ncu-ours-$tag-sass.csv" "$OUT/ncu-fa3-$tag-sass.csv" > "$OUT/ncu-mix-$tag.txt"
  (cd $OUT && tar czf ncu-$tag.tgz ncu-*-$tag.txt ncu-*-$tag-sass.csv ncu-*-$tag-stalls.txt run-$tag.log && rm -f ncu-*-$tag.ncu-rep ncu-*-$tag-sass.csv ncu-*-$tag-stalls.txt ncu-ours-$tag.txt ncu-fa3-$tag.txt run-$tag.log)
done
date -u +"%H:%M:%S end" >> $OUT/gpu.txt
