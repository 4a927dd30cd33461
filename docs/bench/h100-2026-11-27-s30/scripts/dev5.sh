#!/bin/bash
# session 30, call 5 (H100): FP8 head_dim 128's wait for P V(t - 1) held after a quarter (hold4) or half (hold2)
# of the exponentials (FA3's FP8 loop waits after 35 of 114), against main
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
T=$PWD/.carry-tpl
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
for h in hold4 hold2; do
  stamp $h
  timeout 120 python3 tools/ab_rounds.py --baseline-templates $T/main --ours-templates $T/$h --dtypes e4m3 --dims 128 --rounds 5 --json $OUT/abr-$h.json > $OUT/abr-$h.log 2>&1
done
stamp check
FC_TEMPLATE_DIR=$T/hold4 timeout 100 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 128 --families sm90 --repeats 2 > $OUT/check-fp8-hold4.log 2>&1
stamp end
cd $OUT && tar czf extra.tgz *.json && rm -f *.json
