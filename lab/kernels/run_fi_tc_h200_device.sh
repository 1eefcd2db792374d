#!/bin/bash
# THE H200 VERIFICATION GRID on one H200 (measure_production_attention.py --grid fi_tc_h200, priced before the call:
# lab/kernels/predict_fi_tc_h200.py -> production_attention_fi_tc_h200_predictions.csv), then two replicates on the same
# machine: the ninth decode blind grid (--grid fi_dec_blind9, tag _replicate) and cuBLASLt block grid 16
# (measure_deepgemm_gemm.py, tag grid16_replicate). flashinfer-python 0.6.4 from $W (lab/kernels/_flashinfer_site.sh).
# CSVs, logs and an SM-clock / power log (nvidia-smi query, read-only) to $OUT. From the repository root of the copy:
#   W=.dev/fisw bash lab/kernels/run_fi_tc_h200_device.sh [limit_s]
T0=$(date +%s)
W=${W:-.dev/fisw}
LIMIT=${1:-540}
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nvcc --version | tail -2; nproc
  md5sum lab/kernels/measure_production_attention.py lab/kernels/measure_deepgemm_gemm.py lab/harness.py \
    lab/kernels/_flashinfer_site.sh lab/kernels/gemm_grid16_grid.csv $W/*.xz; cat $0; } > $OUT/env.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $OUT/clocks.csv 2>/dev/null &
SMI=$!
. lab/kernels/_flashinfer_site.sh
flashinfer_site $W $OUT/env.txt || { kill $SMI; exit 3; }
echo "flashinfer ready $(el) s"
F='warning #\|Remark\|^\s*\^\|^ *if (\|^ *constexpr'
mkdir -p $OUT/tc $OUT/dec
( cd lab/kernels && python3 measure_production_attention.py --out $OUT/tc --grid fi_tc_h200 --parts build,fi_verify \
  --budget-s 200 2>&1 | grep -v "^\s*$" | grep -v "$F" | tail -6 )
echo "fi_tc_h200 done $(el) s"
( cd lab/kernels && python3 measure_production_attention.py --out $OUT/dec --tag _replicate --grid fi_dec_blind9 \
  --parts build,fi_decode --budget-s 120 2>&1 | grep -v "^\s*$" | grep -v "$F" | tail -4 )
echo "fi_dec_blind9 replicate done $(el) s"
timeout 100 python3 lab/kernels/measure_deepgemm_gemm.py --grid lab/kernels/gemm_grid16_grid.csv --out $OUT \
  --tag grid16_replicate 2>&1 | tail -2
kill $SMI 2>/dev/null
echo "all done $(el) s"
ls -laR $OUT | head -40
