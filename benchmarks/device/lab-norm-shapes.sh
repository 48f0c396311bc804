#!/usr/bin/env bash
# The norm lab's shapes (benchmarks/lab/norm/shapes.py): the 16-bit norms as emitted and
# reshaped or changed, ROUNDS runs over SIZES; logs into $OUT.
#   bash benchmarks/device/lab-norm-shapes.sh [ROUNDS] [TABLE: staged | widths | one_pass | pair | occupancy | parameters | early | rows_in_flight | prefetch] ["R,C;R,C;.."]
set -euo pipefail
rounds=${1:-2}
table=${2:-staged}
sizes=${3:-"8192,8192;8192,8191;8192,6144;16384,8192;4096,4097;4096,4096;4096,5000;4096,3001"}
work=/tmp/norm-shapes
cd "$(dirname "$0")/../lab/norm"
rm -rf "$work"  # no stale object from an earlier table links in
python3 shapes.py "$work" "$table"
pids=()
for f in shapes.cu "$work"/*.cu; do
    nvcc -O3 -arch=sm_90a -std=c++17 -I. -I"$work" -c "$f" -o "$work/$(basename "$f" .cu).o" &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done  # a failed compile stops the script
nvcc -arch=sm_90a "$work"/*.o -o "$work/run"
for r in $(seq "$rounds"); do
    "$work/run" "$sizes" | tee "${OUT:-/tmp}/lab-norm-$table-r$r.txt"
done
