#!/bin/bash
# session 37, call 1 (experiment, v37.1): FP8 head_dim 128 with V^T written ahead and P through shared
# memory (s36 p-smem-fixed.patch, .carry-tpl/psmemfix: P V's SS form, P V(t - 1) still in flight beside Q K^T(t), no
# register holding P; 256-key tiles spill nothing), the library taking 256 keys and counting P's shared
# memory (s36 p-smem-host.patch, .carry-exp). BENCH.md's rule with the tiles forced, then in alternation
# against the landed selection: 256-key tiles (1k-16k), 192-key tiles (4k, 16k).
export LD_LIBRARY_PATH=$PWD/.carry-exp:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry-exp/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
T=$PWD/.carry-tpl/psmemfix/kernel_templates
stamp "check.py e4m3 d128 forced m128n256 v1 (P in shared memory)"
FC_TEMPLATE_DIR=$T FC_TUNING_DB=/tmp/fcdb/c.db timeout 120 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 128 --repeats 2 --families sm90:m128n256s2w12v1,sm90:m128n192s2w12v1 --json $OUT/j/check.json > $OUT/check.log 2>&1; echo "rc $?" >> $OUT/check.log
stamp "ab n256 psmem vs landed selection"
timeout 100 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/b.db --ours-templates $T --ours-variant sm90:m128n256s2w12v1 --dtypes e4m3 --dims 128 --causal both --seqlens 1024,2048,4096,16384 --rounds 5 --json $OUT/j/ab256.json > $OUT/ab256.log 2>&1
stamp "ab n192 psmem vs landed selection"
timeout 60 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/b2.db --ours-templates $T --ours-variant sm90:m128n192s2w12v1 --dtypes e4m3 --dims 128 --causal both --seqlens 4096,16384 --rounds 5 --json $OUT/j/ab192.json > $OUT/ab192.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
