#!/usr/bin/env bash
# The sgemm_bt lab (benchmarks/lab/sgemm_bt_*): sgemm_v13_bt as emitted and the k16 variants beside
# cuBLAS (Bᵀ, pedantic FP32). Argument: rounds.
set -e
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cd benchmarks/lab
python3 sgemm_bt_k16.py /tmp/bt
for f in sgemm_bt_main.cu /tmp/bt/*.cu; do nvcc -O3 -arch=sm_90a -std=c++17 -c $f -o /tmp/bt/$(basename $f .cu).o & done; wait
nvcc -arch=sm_90a /tmp/bt/*.o -lcublas -o /tmp/sgemm-bt-lab
timeout 200 /tmp/sgemm-bt-lab ${1:-3} | tee $OUT/btlab.txt
