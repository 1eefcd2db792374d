#!/bin/bash
# s23gm: cuBLASLt block fp8 grid 14 (torch only), bounded; run from the repo root of the lead checkout copy
set -o pipefail
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
md5sum lab/kernels/measure_deepgemm_gemm.py lab/kernels/_timing.py lab/harness.py .dev/s23gm/grid14.csv .dev/s23gm/run.sh
timeout 110 python3 lab/kernels/measure_deepgemm_gemm.py --grid .dev/s23gm/grid14.csv --out "$OUT" --tag grid14 2>&1 | tee "$OUT/measure_grid14.log" | tail -45
echo "rc ${PIPESTATUS[0]}"
