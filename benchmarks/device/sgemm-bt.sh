#!/usr/bin/env bash
# FP32 GEMM with B stored [N, K] (catalog::sgemm_bt): the numbers, then the kernels' rows for the
# card's GEMM table beside cuBLAS on the same layout (their B [K, N] twins timed in the same call),
# then tessera::gemm_bt on f32 through the table built from them.
mkdir -p /tmp/b && tar xJf .device-pack/b.tar.xz -C /tmp/b  # tessera, sgemm_numbers, gemm_dispatch (release, stripped), both tables
B=/tmp/b/bin
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
case "$name" in *H100*) T=$B/h100.csv;; *) T=$B/h200.csv;; esac
$B/sgemm_numbers --include-ignored on_the_gpu 2>&1 | grep -E "test result|FAILED|panicked"
compute-sanitizer --tool memcheck $B/sgemm_numbers --include-ignored every_sgemm_bt_kernel_multiplies_by_b_stored_n_by_k::on_the_gpu 2>&1 | grep -E "ERROR SUMMARY" | tail -1
S="M=1024,N=1024,K=1024;M=2048,N=2048,K=2048;M=4096,N=4096,K=4096;M=8192,N=8192,K=8192;M=4095,N=4095,K=4095;M=4097,N=4097,K=4097;M=8192,N=8192,K=256"
$B/tessera bench sgemm --kernels sgemm_v12_bt,sgemm_v13_bt,sgemm_v12,sgemm_v13 --sizes "$S" --reps 20 --csv > $OUT/sgemm-bt.csv 2>$OUT/err.txt; echo "bench rc=$?"
cp $T $OUT/table.csv
grep -E '^sgemm,sgemm_v1[23]_bt,' $OUT/sgemm-bt.csv >> $OUT/table.csv
echo "bt rows: $(grep -c '^sgemm,sgemm_v1[23]_bt,' $OUT/table.csv)"
TESSERA_GEMM_TABLE=$OUT/table.csv $B/gemm_dispatch --include-ignored gemm_bt_multiplies_by_b_stored_n_by_k 2>&1 | grep -E "test result|FAILED|panicked"
python3 -c "
import csv,os
for r in csv.DictReader(open(os.environ['OUT']+'/sgemm-bt.csv')): print(r['kernel'], r['shape'], r['value'], r['baseline'], r['baseline_value'], r['percent_of_baseline'])"
