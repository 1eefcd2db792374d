#!/bin/bash
# SCAN 6 of the prefill rows, FlashInfer FA2 only (measure_prefill_kernels.py v6 --grid scan6, priced before the call:
# prefill_kernels_scan6_predictions.csv). A copy of run_prefill_kernels_blind4_device.sh;
# flashinfer-python 0.6.4 from $W (lab/kernels/_flashinfer_site.sh).
# From the repository root of the device copy:   W=.dev/sNN bash .dev/sNN/run_prefill.sh [limit_s]
T0=$(date +%s)
W=${W:-.dev/s18}
LIMIT=${1:-540}
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  nvcc --version | tail -2; nproc
  md5sum lab/kernels/measure_prefill_kernels.py lab/kernels/build_fa3_binary.py lab/kernels/measure_production_attention.py \
    lab/harness.py lab/kernels/_flashinfer_site.sh $W/*.xz; cat $0; } > $OUT/env.txt 2>&1
. lab/kernels/_flashinfer_site.sh
flashinfer_site $W $OUT/env.txt || exit 3
echo "flashinfer ready $(el) s"
F='warning #\|Remark\|^\s*\^\|^ *if (\|^ *constexpr'
python3 lab/kernels/measure_prefill_kernels.py --out $OUT --parts fi --grid scan6 \
  --budget-s $(( LIMIT - $(el) - 20 )) 2>&1 | grep -v "^\s*$" | grep -v "$F" | tail -100
echo "all done $(el) s"
