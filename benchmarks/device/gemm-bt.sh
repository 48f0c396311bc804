#!/usr/bin/env bash
MODE=$1
mkdir -p /tmp/b && tar xJf .device-pack/b.tar.xz -C /tmp/b  # tessera, hgemm_bt_numbers, gemm_dispatch, fragment_math (release, stripped) and both shipped tables
B=/tmp/b/bin
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
case "$name" in *H100*) T=$B/h100.csv;; *) T=$B/h200.csv;; esac
# bootstrap only so the first run's entry-point rows can choose (their rows are not kept):
# each B [N, K] kernel under its B [K, N] twin's records
cp $T /tmp/boot.csv
for p in "v11_bf16 v11_bt_bf16" "v11_f16 v11_bt_f16" "v20_bf16 v20_bt_bf16" "v20_f16 v20_bt_f16" "v19_bf16_to_bf16 v19_bt_bf16_to_bf16" "v19_f16_to_f16 v19_bt_f16_to_f16" "v22_bf16_to_bf16 v22_bt_bf16_to_bf16" "v22_f16_to_f16 v22_bt_f16_to_f16"; do
  set -- $p; grep "^hgemm,hgemm_$1," $T | sed "s/hgemm_$1,/hgemm_$2,/" >> /tmp/boot.csv; done
KBT=hgemm_v11_bt_bf16,hgemm_v11_bt_f16,hgemm_v20_bt_bf16,hgemm_v20_bt_f16,hgemm_v19_bt_bf16_to_bf16,hgemm_v19_bt_f16_to_f16,hgemm_v22_bt_bf16_to_bf16,hgemm_v22_bt_f16_to_f16
S="M=1024,N=1024,K=1024;M=2048,N=2048,K=2048;M=4096,N=4096,K=4096;M=8192,N=8192,K=8192;M=4095,N=4095,K=4095;M=4097,N=4097,K=4097;M=8192,N=8192,K=256;M=16384,N=16384,K=1024"
TESSERA_GEMM_TABLE=/tmp/boot.csv $B/tessera bench hgemm --kernels $KBT --sizes "$S" --reps 20 --csv > $OUT/benchbt.csv 2>$OUT/err1.txt; echo "benchbt rc=$?"; tail -2 $OUT/err1.txt
grep -v '_bt_' $T > $OUT/table.csv
grep -E '^hgemm,hgemm_v[0-9]+_bt_[a-z0-9_]+,' $OUT/benchbt.csv >> $OUT/table.csv
echo "bt rows: $(grep -c '_bt_' $OUT/table.csv)"
export TESSERA_GEMM_TABLE=$OUT/table.csv
$B/hgemm_bt_numbers --include-ignored --skip simulated 2>&1 | grep -E "test result|FAILED|panicked"
$B/gemm_dispatch --include-ignored --skip simulated --skip at_every_shape 2>&1 | grep -E "test result|FAILED|panicked"
$B/fragment_math --include-ignored on_the_gpu 2>&1 | grep -E "test result|FAILED|panicked"
compute-sanitizer --tool memcheck $B/gemm_dispatch --include-ignored gemm_bt_multiplies_by_b_stored_n_by_k::on_the_gpu 2>&1 | grep -E "ERROR SUMMARY|test result" | tail -2
if [ "$MODE" = entry ]; then
  $B/tessera bench hgemm --kernels hgemm_v22_bt_bf16_to_bf16 --sizes "$S" --reps 20 --csv > $OUT/entry.csv 2>$OUT/err2.txt; echo "entry rc=$?"
fi
python3 - <<'PY'
import csv,os
for f in ['benchbt.csv','entry.csv']:
    p=os.environ['OUT']+'/'+f
    if not os.path.exists(p): continue
    print('==',f)
    for r in csv.DictReader(open(p)):
        if f=='entry.csv' and 'tessera::' not in r['kernel']: continue
        if f=='benchbt.csv' and 'tessera::' in r['kernel']: continue
        print(r['kernel'], r['shape'], r['value'], r['baseline'], r['baseline_value'], r['percent_of_baseline'])
PY
