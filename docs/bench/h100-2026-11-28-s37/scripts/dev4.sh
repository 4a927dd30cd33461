#!/bin/bash
# session 37, call 4: the final library (ac0b97f, .carry) where the quick first call runs: the package's
# GPU pytest suite (contexts with the quick first call on), the gpu suite's quick-first-call and
# graph-capture tests, check.py --quick-first-call on the features matrix (windows, sinks, softcap)
# and the varlen one, and the forced quick form on the features matrix.
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python:$PWD/tools
export FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so CUDA_CACHE_DISABLE=1
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "python gpu suite | gpu suite quick + graph | check.py quick features, varlen | forced quick features"
(mkdir -m 700 -p /tmp/pydb; FC_TUNING_DB=/tmp/pydb/k.db timeout 300 python3 -m pytest -p no:cacheprovider -rs -q tests/python/test_gpu.py > $OUT/python-gpu.log 2>&1; echo "rc $?" >> $OUT/python-gpu.log) &
for t in test_quick_first_call test_forward_is_graph_capturable; do FC_GPU_TESTS=$t timeout 100 .carry/bin/test_gpu >> $OUT/gpu-suite.log 2>&1; echo "rc $?" >> $OUT/gpu-suite.log; done
FC_TUNING_DB=/tmp/fcdb/c1.db timeout 150 python3 tools/check.py --quick-first-call --matrix features --head-dims 64,128,256 --repeats 1 --json $OUT/j/check-quick-features.json > $OUT/check-quick-features.log 2>&1; echo "rc $?" >> $OUT/check-quick-features.log
FC_TUNING_DB=/tmp/fcdb/c2.db timeout 100 python3 tools/check.py --quick-first-call --matrix varlen --head-dims 128 --repeats 1 --json $OUT/j/check-quick-varlen.json > $OUT/check-quick-varlen.log 2>&1; echo "rc $?" >> $OUT/check-quick-varlen.log
FC_TUNING_DB=/tmp/fcdb/c3.db timeout 100 python3 tools/check.py --matrix features --repeats 1 --families sm90:m64n32s2w4p0g0q1 --json $OUT/j/check-forced-features.json > $OUT/check-forced-features.log 2>&1; echo "rc $?" >> $OUT/check-forced-features.log
wait
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
