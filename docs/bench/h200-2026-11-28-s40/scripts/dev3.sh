#!/bin/bash
# session 40, call 4 (v40.3): one bucket of the shipped spec (tune-one-bucket.yaml, 12 candidates), tuned
# by this tree's fcjit (a run keeps its fp64 references) and by bf898ec's (each check computes them),
# each into its own copy of one database the candidates were precompiled into: wall time of each tune.
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64
S=docs/bench/h200-2026-11-28-s40/scripts/tune-one-bucket.yaml
nvidia-smi --query-gpu=name,power.limit,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S.%N $1" >> $OUT/gpu.txt; }
rm -rf /tmp/fcdb*; mkdir -m 700 -p /tmp/fcdb /tmp/fcdb-fcjit /tmp/fcdb-fcjit-old
stamp precompile
.carry-t/bin/fcjit --db /tmp/fcdb/k.db precompile --spec $S > $OUT/precompile.log 2>&1
for b in fcjit fcjit-old; do
  cp /tmp/fcdb/k.db /tmp/fcdb-$b/k.db
  stamp "tune $b"
  timeout 35 .carry-t/bin/$b --db /tmp/fcdb-$b/k.db tune --spec $S > $OUT/tune-$b.log 2>&1; echo "rc $?" >> $OUT/tune-$b.log
  stamp "end $b"
done
