#!/bin/bash
# THE NINTH CUDA-CORE DECODE BLIND GRID on one H200 (measure_production_attention.py --grid fi_dec_blind9, priced
# before the call: lab/kernels/predict_fi_dec_blind9.py -> production_attention_fi_dec_blind9_predictions.csv) with
# its launch profiles; flashinfer-python 0.6.4 from $W (lab/kernels/_flashinfer_site.sh). CSVs, logs and an
# SM-clock / power log (nvidia-smi query, read-only) to $OUT. From the repository root of the device copy:
#   W=.dev/fisw bash lab/kernels/run_fi_dec_blind9_device.sh [limit_s]
T0=$(date +%s)
W=${W:-.dev/fisw}
LIMIT=${1:-540}
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nvcc --version | tail -2; nproc
  md5sum lab/kernels/measure_production_attention.py lab/harness.py lab/kernels/_flashinfer_site.sh $W/*.xz; cat $0; } > $OUT/env.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $OUT/clocks.csv 2>/dev/null &
SMI=$!
. lab/kernels/_flashinfer_site.sh
flashinfer_site $W $OUT/env.txt || { kill $SMI; exit 3; }
echo "flashinfer ready $(el) s"
F='warning #\|Remark\|^\s*\^\|^ *if (\|^ *constexpr'
cd lab/kernels
SHAPE_TIMES=$OUT/shape_times.csv python3 measure_production_attention.py --out $OUT --grid fi_dec_blind9 \
  --parts build,fi_decode --budget-s $(( LIMIT - $(el) - 20 )) 2>&1 | grep -v "^\s*$" | grep -v "$F" | tail -8
kill $SMI 2>/dev/null
echo "all done $(el) s"
ls -la $OUT
