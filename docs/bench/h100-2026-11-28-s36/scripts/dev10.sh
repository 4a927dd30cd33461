#!/bin/bash
# session 36, call 10 (experiment, v36.9): FP8 head_dim 128 with 256-key tiles and P V(t) issued in its
# own turn after the softmax (no P V(t - 1) in flight beside Q K^T(t): n256-serial.patch, .carry-tpl/n256;
# offline 0 bytes spilled in the consumers), the library with the host's check taking 256 keys
# (n256-host.patch, .carry-exp). BENCH.md's rule with the tiles forced, then in alternation against the
# landed selection (that library's own templates).
export LD_LIBRARY_PATH=$PWD/.carry-exp:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python FC_QUICK_FIRST_CALL=0
export FLASHCORE_LIB=$PWD/.carry-exp/libflashcore.so
rm -rf /tmp/fcdb; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
T=$PWD/.carry-tpl/n256/kernel_templates
stamp "check.py e4m3 d128 forced m128n256"
FC_TEMPLATE_DIR=$T FC_TUNING_DB=/tmp/fcdb/c.db timeout 70 python3 tools/check.py --matrix base --dtype e4m3 --head-dims 128 --repeats 2 --families sm90:m128n256s2w12p1 --json $OUT/j/check.json > $OUT/check.log 2>&1; echo "rc $?" >> $OUT/check.log
stamp "ab n256 serial vs landed selection"
timeout 120 python3 tools/ab_rounds.py --baseline-db /tmp/fcdb/b.db --ours-templates $T --ours-variant sm90:m128n256s2w12p1 --dtypes e4m3 --dims 128 --causal both --seqlens 1024,2048,4096,16384 --rounds 5 --json $OUT/j/ab.json > $OUT/ab.log 2>&1
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
