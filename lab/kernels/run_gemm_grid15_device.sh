#!/bin/bash
# s24gm: cuBLASLt block fp8 grid 15 (torch only, K % 512 == 0 only), bounded; run from the repo root of the lead checkout copy
set -o pipefail
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
md5sum lab/kernels/measure_deepgemm_gemm.py lab/kernels/_timing.py lab/harness.py .dev/s24gm/grid15.csv .dev/s24gm/run.sh
awk -F, 'NR > 1 && $3 % 512 { bad = 1 } END { exit bad }' .dev/s24gm/grid15.csv || { echo "a K not a multiple of 512"; exit 3; }
timeout 90 python3 lab/kernels/measure_deepgemm_gemm.py --grid .dev/s24gm/grid15.csv --out "$OUT" --tag grid15 2>&1 | tee "$OUT/measure_grid15.log" | tail -45
echo "rc ${PIPESTATUS[0]}"
