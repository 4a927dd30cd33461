#!/bin/bash
# session 41, calls 2-3: the shipped spec's `fcjit tune` with do_bench's timing and the finals (v41.2),
# from a fresh database, resumed from what an earlier call exported ($1: a TSV, or none), interrupted
# (SIGINT) near the call's end and exported again; $2: the dtypes to tune, in order (default
# f16,bf16); when the tune has finished with time to spare, bench.py's sweep and GQA rows against the
# peers with its winners (the database's rows over the shipped layer), and the shipped winners as
# the baseline (an empty database), three rounds.
IMPORT=$1
DTYPES=${2:-f16,bf16}
DEADLINE=${3:-545}   # seconds of this script before the tune is interrupted
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry-t/lib/libflashcore.so PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb*; mkdir -m 700 -p /tmp/fcdb /tmp/fcdb-shipped; export FC_TUNING_DB=/tmp/fcdb/k.db
FC=".carry-t/bin/fcjit --db /tmp/fcdb/k.db"
[ -d .peers/fa3 ] && python3 -m pip install -q --no-index --no-deps .peers/fa3/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version,memory.total --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
if [ -n "$IMPORT" ] && [ "$IMPORT" != none ]; then
  stamp "import $IMPORT"
  $FC cache import $IMPORT > $OUT/import.log 2>&1; echo "rc $?" >> $OUT/import.log
fi
rc=0
stamp "tune $DTYPES"
timeout -s INT $(( DEADLINE - SECONDS )) $FC tune --dtype $DTYPES > $OUT/tune.log 2>&1; rc=$?; echo "rc $rc" >> $OUT/tune.log
stamp "export"
$FC cache export $OUT/tune-all.tsv > $OUT/export.log 2>&1
$FC cache export --winners $OUT/tune-winners.tsv >> $OUT/export.log 2>&1
if [ $rc -eq 0 ] && [ $(( DEADLINE - SECONDS )) -gt 200 ]; then
  stamp "bench sweep,gqa (new winners; baseline: the shipped ones)"
  timeout $(( DEADLINE + 30 - SECONDS )) python3 tools/bench.py --rounds 3 --labels sweep,gqa \
    --baseline-db /tmp/fcdb-shipped/k.db --json $OUT/j/bench-tuned.json > $OUT/bench-tuned.log 2>&1
fi
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
