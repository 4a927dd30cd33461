#!/usr/bin/env bash
# temporary device script (not committed)
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64 FLASHCORE_LIB=$PWD/.carry/lib/libflashcore.so
export PYTHONPATH=$PWD/python FC_SOURCE_ROOT=$PWD
D=$(mktemp -d); chmod 700 $D; export FC_TUNING_DB=$D/t.db
FCJIT=.carry/bin/fcjit
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > $OUT/gpu.txt
nproc >> $OUT/gpu.txt; lscpu | grep 'Model name' >> $OUT/gpu.txt
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout $limit bash -c "$*" > $OUT/$name.log 2>&1; echo "$name: rc $? in $(( $(date +%s) - t0 )) s" | tee -a $OUT/steps.txt; }
runs() {
  for args in "--batch 4 --heads 16 --seqlen 4096 --head-dim 128 --causal" "--batch 4 --heads 16 --seqlen 4096 --head-dim 128" \
              "--batch 4 --heads 32 --seqlen 4096 --head-dim 64" "--batch 4 --heads 8 --seqlen 4096 --head-dim 256" \
              "--batch 2 --heads 8 --seqlen 512 --head-dim 64"; do
    for q in "" --no-quick-first-call; do
      rm -f $D/r.db*; echo "== $args $q"
      CUDA_CACHE_DISABLE=1 $FCJIT --db $D/r.db --json run $args --dtype bf16 $q --iters 10; echo "rc=$?"
    done
  done
}
export -f runs; export D FCJIT
if [ "${1:-A}" = A ]; then
step fcjit-run 150 runs
step test-gpu-quick 200 "FC_GPU_TESTS=test_quick_first_call .carry/bin/test_gpu"
step pytest-quick 200 "python3 -m pytest -q -p no:cacheprovider tests/python/test_gpu.py -k quick"
step first-call 300 "CUDA_CACHE_DISABLE=1 python3 tools/first_call.py --rounds 2 --json $OUT/first_call.json"
elif [ "${1:-A}" = B ]; then
step check-quick-base 240 "python3 tools/check.py --quick-first-call --matrix base --head-dims 128,256 --repeats 2"
step check-quick-features 120 "python3 tools/check.py --quick-first-call --matrix features --repeats 2"
fi
if [ "${1:-A}" = C ]; then
step compile-time 300 "python3 tools/compile_time.py --sets base,mid --repeats 3 SOURCES/*.cu"
step quick-speed 200 "python3 quick_tiles_speed.py"
step fcjit-run 150 runs
fi
if [ "${1:-A}" = D ]; then
step test-gpu-quick 200 "FC_GPU_TESTS=test_quick_first_call .carry/bin/test_gpu"
step first-call 200 "CUDA_CACHE_DISABLE=1 python3 tools/first_call.py --rounds 3 --json $OUT/first_call.json"
step fcjit-run 100 runs
step check-quick-base 200 "python3 tools/check.py --quick-first-call --matrix base --head-dims 128,256 --repeats 2"
step check-quick-features 100 "python3 tools/check.py --quick-first-call --matrix features --repeats 2"
fi
if [ "${1:-A}" = E ]; then
step test-gpu 420 ".carry/bin/test_gpu"
step pytest-gpu 160 "FC_QUICK_FIRST_CALL=0 python3 -m pytest -q -p no:cacheprovider -x tests/python/test_gpu.py"
fi
if [ "${1:-A}" = F ]; then
step test-gpu-quick 200 "FC_GPU_TESTS=test_quick_first_call .carry/bin/test_gpu"
step pytest-quick 200 "python3 -m pytest -q -p no:cacheprovider tests/python/test_gpu.py -k quick"
step fcjit-run 100 runs
step check-quick-features 150 "python3 tools/check.py --quick-first-call --matrix features --head-dims 128 --repeats 2"
fi
