#!/usr/bin/env bash
# A transformer MLP's two linear layers on B stored [N, K]: the numbers (GPU tests, memcheck),
# then `tessera bench epilogue` (the B [N, K] residual kernels beside their B [K, N] twins, and
# the entry rows, tessera::gemm_bt_bias_gelu among them) and torch's figures, in one call.
mkdir -p /tmp/b && tar xJf .device-pack/b.tar.xz -C /tmp/b  # tessera and epilogue_numbers (release, stripped)
B=/tmp/b/bin
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
$B/epilogue_numbers --include-ignored a_linear_layer 2>&1 | grep -E "test result|FAILED|panicked"
compute-sanitizer --tool memcheck $B/epilogue_numbers --include-ignored a_linear_layer_with_b_stored_n_by_k_adds_the_residual_and_rounds_once::on_the_gpu 2>&1 | grep -E "ERROR SUMMARY" | tail -1
S="M=1024,N=1024,K=1024;M=2048,N=2048,K=2048;M=4096,N=4096,K=4096;M=8192,N=8192,K=8192;M=4097,N=4097,K=4097;M=8192,N=8192,K=256;M=16384,N=4096,K=4096;M=16384,N=4096,K=14336"
timeout 300 $B/tessera bench epilogue --kernels hgemm_bt_bias_residual_bf16,hgemm_bt_bias_residual_small_tiles_bf16,hgemm_bias_residual_bf16,hgemm_bias_residual_small_tiles_bf16 --sizes "$S" --reps 10 --csv > $OUT/linear.csv 2>$OUT/err.txt; echo "bench rc=$?"
(cd benchmarks && python3 linear_torch.py) > $OUT/torch.txt 2>&1; echo "torch rc=$?"; cat $OUT/torch.txt
python3 -c "
import csv,os
for r in csv.DictReader(open(os.environ['OUT']+'/linear.csv')): print(r['kernel'], r['shape'], r['value'], r['baseline'], r['baseline_value'], r['percent_of_baseline'])"
