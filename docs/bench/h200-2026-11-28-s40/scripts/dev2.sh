#!/bin/bash
# session 40, calls 2-3: resume the H200's `fcjit tune` (the default spec: 16-bit buckets, then FP8's e4m3
# buckets) from the measurements the earlier calls exported (docs/bench/h200-2026-11-28-s40/run*/tune-all.tsv,
# imported into a fresh database), interrupted (SIGINT) near the call's end and exported again; when the
# tune has finished with time to spare, bench.py's sweep and GQA rows against the peers with its winners
# (the database's own rows, over the shipped layer), three rounds.
IMPORT=$1
DEADLINE=${2:-560}   # seconds of this script before the tune is interrupted
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry-t/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
FC=".carry-t/bin/fcjit --db /tmp/fcdb/k.db"
python3 -m pip install -q --no-index --no-deps .peers/fa3/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version,memory.total --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "import $IMPORT"
$FC cache import $IMPORT > $OUT/import.log 2>&1; echo "rc $?" >> $OUT/import.log
rc=0
for d in f16,bf16 e4m3; do
  left=$(( DEADLINE - SECONDS )); [ $left -lt 20 ] && { rc=124; break; }
  stamp "tune $d"
  timeout -s INT $left $FC tune --dtype $d > $OUT/tune-$d.log 2>&1; rc=$?; echo "rc $rc" >> $OUT/tune-$d.log
  [ $rc -ne 0 ] && break
done
stamp "export"
$FC cache export $OUT/tune-all.tsv > $OUT/export.log 2>&1
$FC cache export --winners $OUT/tune-winners.tsv >> $OUT/export.log 2>&1
if [ $rc -eq 0 ] && [ $(( DEADLINE - SECONDS )) -gt 170 ]; then
  stamp "bench sweep,gqa (the H200's own winners)"
  timeout $(( DEADLINE + 15 - SECONDS )) python3 tools/bench.py --rounds 3 --labels sweep,gqa --json $OUT/j/bench-tuned.json > $OUT/bench-tuned.log 2>&1
fi
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
