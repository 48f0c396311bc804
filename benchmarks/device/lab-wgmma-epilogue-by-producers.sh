#!/usr/bin/env bash
# The wgmma epilogue lab (benchmarks/lab/epilogue/wgmma_*): HGEMM V11 bf16 → bf16 plain, with the bias,
# with bias + GELU fused, the bias GEMM then gelu_bf16, and the GELU by the producer warps. Argument: rounds.
set -e
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cd benchmarks/lab/epilogue
python3 wgmma_variants.py /tmp/wg
for f in wgmma_main.cu /tmp/wg/*.cu; do nvcc -O3 -arch=sm_90a -std=c++17 -c $f -o /tmp/wg/$(basename $f .cu).o & done; wait
nvcc -arch=sm_90a /tmp/wg/*.o -lcuda -o /tmp/wgmma-lab
timeout 150 stdbuf -oL /tmp/wgmma-lab ${1:-3} | tee $OUT/wglab.txt
