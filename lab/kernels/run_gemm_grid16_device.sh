#!/bin/bash
# cuBLASLt block fp8 grid 16 on one H200 (torch only, K % 512 == 0 only; priced before the call:
# lab/kernels/predict_gemm_grid16.py -> production_kernels/gemm_grid16_prediction_h200_2026-11-28.csv), bounded.
# From the repository root of the device copy:   bash lab/kernels/run_gemm_grid16_device.sh
set -o pipefail
G=lab/kernels/gemm_grid16_grid.csv
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  md5sum lab/kernels/measure_deepgemm_gemm.py lab/kernels/_timing.py lab/harness.py $G $0; } > $OUT/env.txt 2>&1
awk -F, 'NR > 1 && $3 % 512 { bad = 1 } END { exit bad }' $G || { echo "a K not a multiple of 512"; exit 3; }
timeout 200 python3 lab/kernels/measure_deepgemm_gemm.py --grid $G --out "$OUT" --tag grid16 2>&1 | tee "$OUT/measure_grid16.log" | tail -20
echo "rc ${PIPESTATUS[0]}"
ls -la $OUT
