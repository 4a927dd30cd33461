#!/bin/bash
# session 40, call 1: the device tool lends only H200s today. The shipped winners' H200 rows are from
# 2026-11-22 (before the persistent grid, the wider key tiles, the turns kernels). (1) bench.py's sweep
# and GQA rows against the peers with the library as shipped (those stale H200 winners), three rounds,
# fresh database after the shipped precompile; (2) `fcjit tune` (the default spec) of the 16-bit buckets
# into that database, interrupted (SIGINT) at the call's end, its measurements exported to resume.
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry-t/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/fa3/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version,memory.total --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "precompile"
timeout 100 .carry-t/bin/fcjit --db /tmp/fcdb/k.db precompile --arch sm_90a > $OUT/precompile.log 2>&1; echo "rc $?" >> $OUT/precompile.log
stamp "bench sweep,gqa (shipped winners)"
timeout 240 python3 tools/bench.py --rounds 3 --labels sweep,gqa --json $OUT/j/bench-shipped.json > $OUT/bench-shipped.log 2>&1
stamp "tune f16,bf16"
left=$(( 560 - SECONDS )); [ $left -lt 30 ] && left=30
timeout -s INT $left .carry-t/bin/fcjit --db /tmp/fcdb/k.db tune --dtype f16,bf16 > $OUT/tune16.log 2>&1; echo "rc $?" >> $OUT/tune16.log
stamp "export"
.carry-t/bin/fcjit --db /tmp/fcdb/k.db cache export $OUT/tune-all.tsv > $OUT/export.log 2>&1
.carry-t/bin/fcjit --db /tmp/fcdb/k.db cache export --winners $OUT/tune-winners.tsv >> $OUT/export.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
