#!/bin/bash
# THE H200 GEMM TRANSFER GRID on one H200: the fifth fp8 GEMM set and the fourth small-M set of the H100-SXM (201
# shapes, priced before the call: lab/kernels/predict_h200_gemm.py -> production_kernels/h200_gemm_predictions.csv),
# through torch._scaled_mm / torch.nn.functional.linear, weights rotated past the L2 (measure_production_kernels.py
# --grid list). CSV, notes and an SM-clock / power log (nvidia-smi query, read-only) to $OUT. From the repository root
# of the device copy:   bash lab/kernels/run_h200_gemm_device.sh
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nproc; md5sum lab/kernels/measure_production_kernels.py lab/kernels/_timing.py \
    hwmodels/calibration/data/production_kernels/h200_gemm_predictions.csv; cat $0; } > $OUT/env.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $OUT/clocks.csv 2>/dev/null &
SMI=$!
PYTHONUNBUFFERED=1 timeout 400 python3 lab/kernels/measure_production_kernels.py --out $OUT --grid list --tag _h200gemm \
  --shapes hwmodels/calibration/data/production_kernels/h200_gemm_predictions.csv 2>&1 | grep -v "^\s*$" | tail -12
kill $SMI 2>/dev/null
echo "all done $(el) s"
ls -la $OUT
