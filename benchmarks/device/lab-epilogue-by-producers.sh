#!/usr/bin/env bash
# The epilogue lab (benchmarks/lab/epilogue): SGEMM V13 plain, with bias + GELU as emitted, and the
# variants of variants.py (the GELU by the producer warpgroup among them), at 4096³, 8192×8192×256, 8192³.
set -e
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cd benchmarks/lab/epilogue
python3 variants.py /tmp/eplab
for f in main.cu /tmp/eplab/*.cu; do nvcc -O3 -arch=sm_90a -std=c++17 -I. -c $f -o /tmp/eplab/$(basename $f .cu).o & done; wait
nvcc -arch=sm_90a /tmp/eplab/*.o -o /tmp/epilogue
/tmp/epilogue 3 | tee $OUT/eplab.txt
