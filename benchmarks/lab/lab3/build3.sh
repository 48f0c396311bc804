#!/bin/bash
# build3.sh OUT [nvcc] : builds lab3 from variants3.inc's sources
set -e
cd "$(dirname "$0")"
out=$1; nvcc=${2:-nvcc}; shift 2 || true
srcs=${SRCS:-$(sed -n "s/V(\(.*\))/\1/p" variants3.inc | while read k; do grep -l "^$k(" *.cu; done | sort -u)}
$nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17 -lineinfo -I. "$@" lab3.cu $srcs -lcublas -o $out
