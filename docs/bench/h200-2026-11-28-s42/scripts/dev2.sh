#!/bin/bash
# session 42, call 2 (H200): split-KV on the sm90 kernel's GQA-packed rows (.carry-t: the working tree's
# build, the selector giving every GQA-packed problem on sm_90a to the Hopper kernel, splits by the
# wave-efficiency rule), .peers/fa3:
#   1. check.py (BENCH.md's rule, fresh inputs, outputs poisoned, 3 repeats bit for bit), base and
#      features matrices: packed rows forced with 3 splits (sm90:m64w8g1k3) and with two consumers,
#      splits chosen (sm90:g1) at head_dim 64, 128, 256; forced k3 at 96, 192; the selector at 128
#   2. decode_sweep.py bf16 (same process and tensors as cuDNN via SDPA, FA3): the selector's choice
#      against the decode kernel (chosen splits; three stages) and the packed rows unsplit (k1), with
#      64-key tiles, on decode and few-query shapes; head_dim 64 and 256 on three of them
#   3. the gpu suite's selector, graph-capture and bit-identity tests
export LD_LIBRARY_PATH=$PWD/.carry-t/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry-t/lib/libflashcore.so PYTHONPATH=$PWD/python:$PWD/tools FC_QUICK_FIRST_CALL=0
rm -rf /tmp/fcdb*; mkdir -m 700 -p /tmp/fcdb; export FC_TUNING_DB=/tmp/fcdb/k.db
python3 -m pip install -q --no-index --no-deps .peers/*/*.whl > /tmp/pip.log 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version,memory.total --format=csv > $OUT/gpu.txt
stamp() { date -u +"%H:%M:%S $1" >> $OUT/gpu.txt; }
mkdir -p $OUT/j
stamp "check forced packed 64,128,256"
timeout 230 python3 tools/check.py --matrix all --head-dims 64,128,256 --families sm90:m64w8g1k3,sm90:g1 --repeats 3 --json $OUT/j/check-a.json > $OUT/check-a.log 2>&1; echo "rc $?" >> $OUT/check-a.log
stamp "check forced packed 96,192"
timeout 80 python3 tools/check.py --matrix all --head-dims 96,192 --families sm90:m64w8g1k3 --repeats 3 --json $OUT/j/check-b.json > $OUT/check-b.log 2>&1; echo "rc $?" >> $OUT/check-b.log
stamp "check selector 128"
timeout 60 python3 tools/check.py --matrix all --head-dims 128 --repeats 3 --json $OUT/j/check-c.json > $OUT/check-c.log 2>&1; echo "rc $?" >> $OUT/check-c.log
C="default decode decode:s3 sm90:m64w8g1k1 sm90:m64n64w8g1 sm90:m64n64w8g1k1"
stamp "decode_sweep d128"
timeout 150 python3 tools/decode_sweep.py $C --dtype bf16 --json $OUT/j/sweep-d128.json --shapes 8,32,8,1,32768 4,32,8,1,32768 64,32,8,1,8192 64,28,4,1,8192 8,32,8,16,16000,causal 8,64,8,16,16000,causal 1,32,8,1,131072 16,32,8,4,4096 2,32,8,1,20000 32,32,8,1,2048 > $OUT/sweep-d128.log 2>&1; echo "rc $?" >> $OUT/sweep-d128.log
for d in 64 256; do
  [ $SECONDS -lt 480 ] || break
  stamp "decode_sweep d$d"
  timeout 50 python3 tools/decode_sweep.py default decode sm90:m64w8g1k1 --dtype bf16 --head-dim $d --json $OUT/j/sweep-d$d.json --shapes 8,32,8,1,32768 64,32,8,1,8192 8,32,8,16,16000,causal > $OUT/sweep-d$d.log 2>&1; echo "rc $?" >> $OUT/sweep-d$d.log
done
stamp "gpu suite"
for t in test_selected_kernels_match_reference_over_awkward_shapes test_forward_is_graph_capturable test_bit_identical_over_repeated_runs; do
  [ $SECONDS -lt 560 ] || break
  FC_SOURCE_ROOT=$PWD FC_GPU_TESTS=$t timeout $(( 590 - SECONDS )) .carry-t/bin/test_gpu > $OUT/gpu-$t.log 2>&1; echo "rc $?" >> $OUT/gpu-$t.log
done
stamp end
cd $OUT && mkdir -p logs && mv *.log logs/ && tar czf logs.tgz logs j && rm -rf logs j
