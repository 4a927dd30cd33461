#!/bin/bash
# usage: sass_loop.sh NAME SPEC  -> /tmp/fcp/sass/NAME/*.addr from .carry-tpl/NAME
cd /work/main
mkdir -p /tmp/fcp/sass/$1; rm -f /tmp/fcp/sass/$1/*; rm -f /tmp/fcp/q.db
FC_TEMPLATE_DIR=$PWD/.carry-tpl/$1 FC_DUMP_PTX=/tmp/fcp/sass/$1 FC_TUNING_DB=/tmp/fcp/q.db build-gpu/tools/fcjit precompile --spec $2 2>&1 | grep -v "^\[" 
for f in /tmp/fcp/sass/$1/*.ptx; do /usr/local/cuda/bin/ptxas -arch=sm_90a -O3 $f -o ${f%.ptx}.cubin && /root/tk/x/nvidia/cu13/bin/cuobjdump -sass ${f%.ptx}.cubin | grep -E "^\s+/\*[0-9a-f]{4}\*/" | sed -E 's/^\s+\/\*([0-9a-f]+)\*\/\s+/\1 /; s/\s*;.*//' > ${f%.ptx}.addr; done
