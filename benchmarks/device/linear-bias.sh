#!/usr/bin/env bash
mkdir -p /tmp/b && tar xJf .device-pack/b.tar.xz -C /tmp/b  # tessera and epilogue_numbers (release, stripped)
B=/tmp/b/bin
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
$B/epilogue_numbers --include-ignored a_linear_layer_with_b_stored_n_by_k_adds_the_bias_and_rounds_once::on_the_gpu 2>&1 | grep -E "test result|FAILED|panicked"
compute-sanitizer --tool memcheck $B/epilogue_numbers --include-ignored a_linear_layer_with_b_stored_n_by_k_adds_the_bias_and_rounds_once::on_the_gpu 2>&1 | grep -E "ERROR SUMMARY" | tail -1
timeout 100 $B/tessera bench epilogue --kernels hgemm_bias_bf16,hgemm_bias_small_tiles_bf16,hgemm_bt_bias_bf16,hgemm_bt_bias_small_tiles_bf16 --sizes "M=1024,N=1024,K=1024;M=4096,N=4096,K=4096;M=8192,N=8192,K=256" --reps 10 --csv > $OUT/linear.csv 2>$OUT/err.txt; echo "bench rc=$?"
python3 -c "
import csv,os
for r in csv.DictReader(open(os.environ['OUT']+'/linear.csv')): print(r['kernel'], r['shape'], r['value'], r['baseline'], r['baseline_value'], r['percent_of_baseline'])"
