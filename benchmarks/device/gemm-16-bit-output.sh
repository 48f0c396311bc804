#!/usr/bin/env bash
mkdir -p /tmp/b && tar xJf .device-pack/b.tar.xz -C /tmp/b  # tessera, hgemm_numbers, gemm_dispatch (release, stripped) and both shipped tables
B=/tmp/b/bin
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
case "$name" in *H100*) T=$B/h100.csv;; *) T=$B/h200.csv;; esac
# a table without 16-bit-output rows (the H100's) gets V11's f32 rows under the 16-bit names for
# the first run's entry-point rows only; those rows are not kept
cp $T /tmp/boot.csv
if ! grep -q _to_bf16 $T; then for t in bf16 f16; do grep "^hgemm,hgemm_v11_$t," $T | sed "s/hgemm_v11_$t,/hgemm_v11_${t}_to_$t,/" >> /tmp/boot.csv; done; fi
K16=$(for v in 11 19 20 21 22; do printf "hgemm_v${v}_bf16_to_bf16,hgemm_v${v}_f16_to_f16,"; done)
S="M=1024,N=1024,K=1024;M=2048,N=2048,K=2048;M=4096,N=4096,K=4096;M=8192,N=8192,K=8192;M=4095,N=4095,K=4095;M=4097,N=4097,K=4097;M=8192,N=8192,K=256;M=16384,N=16384,K=1024"
TESSERA_GEMM_TABLE=/tmp/boot.csv $B/tessera bench hgemm --kernels ${K16%,} --sizes "$S" --reps 20 --csv > $OUT/bench16.csv 2>$OUT/err1.txt; echo "bench16 rc=$?"
grep -vE '_to_(bf16|f16),' $T > $OUT/table.csv
grep -E '^hgemm,hgemm_v[0-9]+_(bf16_to_bf16|f16_to_f16),' $OUT/bench16.csv >> $OUT/table.csv
echo "rows: $(grep -cE '_to_(b?f16),' $OUT/table.csv)"
export TESSERA_GEMM_TABLE=$OUT/table.csv
if [ "$1" = entry ]; then
  $B/tessera bench hgemm --kernels hgemm_v22_bf16_to_bf16 --sizes "$S" --reps 20 --csv > $OUT/entry.csv 2>$OUT/err2.txt; echo "entry rc=$?"
fi
python3 - <<'PY'
import csv,os
for f in ['bench16.csv','entry.csv']:
    p=os.environ['OUT']+'/'+f
    if not os.path.exists(p): continue
    print('==',f)
    for r in csv.DictReader(open(p)):
        print(r['kernel'], r['shape'], r['value'], r['baseline_value'], r['percent_of_baseline'])
PY
$B/hgemm_numbers --include-ignored --skip simulated 2>&1 | grep -E "test result|FAILED|panicked"
$B/gemm_dispatch --include-ignored --skip simulated --skip at_every_shape 2>&1 | grep -E "test result|FAILED|panicked"
compute-sanitizer --tool memcheck $B/hgemm_numbers --include-ignored sixteen_bit_outputs_are_the_f32_result_rounded_once::on_the_gpu 2>&1 | grep -E "ERROR SUMMARY|test result" | tail -2
