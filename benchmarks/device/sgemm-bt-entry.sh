#!/usr/bin/env bash
# tessera::gemm_bt on f32: the direct sgemm_bt kernel or a transposed copy of B and a B [K, N]
# SGEMM, as the shipped table decides — the numbers on the GPU (memcheck too), then the sgemm
# bench's entry row beside cuBLAS (Bᵀ) with the kernels it chooses among in the same call.
mkdir -p /tmp/b && tar xJf .device-pack/b.tar.xz -C /tmp/b  # tessera and gemm_dispatch (release, stripped)
B=/tmp/b/bin
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
$B/gemm_dispatch --include-ignored --skip at_every_shape 2>&1 | grep -E "test result|FAILED|panicked"
compute-sanitizer --tool memcheck $B/gemm_dispatch --include-ignored gemm_bt_multiplies_by_b_stored_n_by_k::on_the_gpu 2>&1 | grep -E "ERROR SUMMARY" | tail -1
S="M=1024,N=1024,K=1024;M=2048,N=2048,K=2048;M=4096,N=4096,K=4096;M=8192,N=8192,K=8192;M=4095,N=4095,K=4095;M=4097,N=4097,K=4097;M=8192,N=8192,K=256"
$B/tessera bench sgemm --kernels sgemm_v12_bt,sgemm_v13_bt,sgemm_v12,sgemm_v13 --sizes "$S" --reps 20 --csv > $OUT/sgemm-bt-entry.csv 2>$OUT/err.txt; echo "bench rc=$?"
python3 -c "
import csv,os
for r in csv.DictReader(open(os.environ['OUT']+'/sgemm-bt-entry.csv')): print(r['kernel'], r['shape'], r['value'], r['baseline'], r['baseline_value'], r['percent_of_baseline'])"
