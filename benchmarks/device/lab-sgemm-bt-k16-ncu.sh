#!/usr/bin/env bash
# ncu of the sgemm_bt lab's first launches (2048³) of sgemm_v13_bt and k16: speed of light, scheduler,
# warp states and the shared-memory counters.
set -e
nvidia-smi --query-gpu=name --format=csv,noheader
cd benchmarks/lab
python3 sgemm_bt_k16.py /tmp/bt > /dev/null
for f in sgemm_bt_main.cu /tmp/bt/*.cu; do nvcc -O3 -arch=sm_90a -std=c++17 -c $f -o /tmp/bt/$(basename $f .cu).o 2>/dev/null & done; wait
nvcc -arch=sm_90a /tmp/bt/*.o -lcublas -o /tmp/sgemm-bt-lab
timeout 300 ncu --clock-control none -k 'regex:^(k16|sgemm_v13_bt)$' -c 2 --section WarpStateStats --section SchedulerStats --section SpeedOfLight \
  --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum \
  /tmp/sgemm-bt-lab 1 > $OUT/btncu.txt 2>&1 || true
grep -v "^==PROF==\|^  *$" $OUT/btncu.txt | grep -i "k16\|sgemm_v13_bt\|Duration\|bank\|wavefront\|inst_executed\|Stall\|Issued\|Eligible\|Active Warps\|No Eligible\|SM Frequency\|Throughput" | head -80
