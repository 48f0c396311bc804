#!/usr/bin/env bash
# ncu of y = Aᵀ·x at the shapes where torch leads (torch's cuBLAS kernels and tessera's, launch
# shapes and speed of light) and of the 16-bit LayerNorm beside RMSNorm at 8192² (where the
# LayerNorm trails). Needs .device/tessera; logs into $OUT.
set -u
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
here=$(cd "$(dirname "$0")/.." && pwd)
timeout 240 ncu --profile-from-start off --section LaunchStats --section SpeedOfLight --section Occupancy \
    python3 "$here/lab/rows/gemv_t_torch_ncu.py" > "$OUT/ncu-gemv-t-torch.txt" 2>&1
sizes="M=14336,N=4096;M=8192,N=3000;M=4097,N=4095;M=16384,N=8192;M=8192,N=8192"
# every gemv kernel runs at each size; ncu profiles the Aᵀ·x ones only
timeout 200 ncu -k regex:gemv_t --section LaunchStats --section SpeedOfLight --section Occupancy \
    ./.device/tessera bench gemv --sizes "$sizes" --reps 1 --warmup 0 > "$OUT/ncu-gemv-t.txt" 2>&1
timeout 180 ncu -k regex:norm --section LaunchStats --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
    ./.device/tessera bench norm --kernels layer_norm_bf16,rms_norm_bf16,layer_norm_f32 --sizes "R=8192,C=8192" --reps 1 --warmup 0 > "$OUT/ncu-norms-8192.txt" 2>&1
# the timings beside: tessera and torch in the same call
./.device/tessera bench gemv --sizes "$sizes" --reps 20 > "$OUT/bench-gemv-t.txt" 2>&1
python3 "$here/rows_torch.py" > "$OUT/torch-rows.txt" 2>&1
ls -la "$OUT"
