#!/bin/bash
# THE H200 TRANSFER GRID, part D (priced before the call: lab/kernels/predict_h200_transfer.py --part D ->
# hwmodels/calibration/data/production_attention/h200_transfer_d_predictions.csv): cuBLASLt's block-scaled fp8 GEMM grid
# 15 (the H100's blind grid, K % 512 == 0) re-run on the lent H200 by the same script (torch only: no DeepGEMM build, no
# carried files). From the repository root of the device copy:   bash lab/kernels/run_h200_transfer_d_device.sh
set -o pipefail
G=hwmodels/calibration/data/production_attention/h200_transfer_d_grid.csv
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  md5sum lab/kernels/measure_deepgemm_gemm.py lab/kernels/_timing.py lab/harness.py $G; cat $0; } > $OUT/env.txt 2>&1
awk -F, 'NR > 1 && $3 % 512 { bad = 1 } END { exit bad }' $G || { echo "a K not a multiple of 512"; exit 3; }
timeout 150 python3 lab/kernels/measure_deepgemm_gemm.py --grid $G --out "$OUT" --tag grid15 2>&1 | tee "$OUT/measure.log" | tail -8
echo "rc ${PIPESTATUS[0]}"
