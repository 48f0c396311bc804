#!/usr/bin/env bash
# Builds the SGEMM lab (hand-written CUDA variants of V10 beside cuBLAS) with nvcc.
# On the GPU machine: benchmarks/lab/build.sh && benchmarks/lab/lab 20 all ["name filter"]
# Here (no GPU), with nvcc from PyPI: NVCC=... CUDA_INCLUDE=... CUBLAS_LIB=... benchmarks/lab/build.sh
set -euo pipefail
cd "$(dirname "$0")"
nvcc=${NVCC:-nvcc}
extra=()
[ -n "${CUDA_INCLUDE:-}" ] && extra+=(-I"$CUDA_INCLUDE" -I"$CUDA_INCLUDE/../cccl")
[ -n "${CUDA_LIB:-}" ] && extra+=(-L"$CUDA_LIB")
[ -n "${CUBLAS_LIB:-}" ] && extra+=(-L"$CUBLAS_LIB")
"$nvcc" -O3 -arch=sm_90 -std=c++17 -lineinfo "${extra[@]}" lab.cu -lcublas -o lab
