#!/bin/bash
# THE H200 FLASHINFER TOP-K GRID on one H200 (measure_topk_engines.py --page-table at the shapes of the committed
# prediction, lab/kernels/predict_topk_fi_h200.py -> production_kernels/topk_flashinfer_h200_prediction_2026-11-28.csv):
# FlashInfer 0.6.4's ragged and page-table transforms (lab/kernels/_flashinfer_site.sh from $W); the recorded score rows
# (scores_codegqa_16k.npy) written here from the shipped trace. Files packed into $OUT/topk_fi_h200.tgz (the device
# returns a limited number of files). From the repository root of the device copy:
#   W=.dev/fisw bash lab/kernels/run_topk_fi_h200_device.sh
T0=$(date +%s)
W=${W:-.dev/fisw}
el() { echo $(( $(date +%s) - T0 )); }
O=/tmp/otk; mkdir -p $O /tmp/toplib
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nproc; md5sum lab/kernels/measure_topk_engines.py lab/kernels/_flashinfer_site.sh \
    hwmodels/calibration/data/production_kernels/topk_flashinfer_h200_prediction_2026-11-28.csv $W/*.xz; cat $0; } > $O/env.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $O/clocks.csv 2>/dev/null &
SMI=$!
pack() { kill $SMI 2>/dev/null; tar -czf $OUT/topk_fi_h200.tgz -C $O . ; echo "packed at $(el) s"; }
. lab/kernels/_flashinfer_site.sh
flashinfer_site $W $O/env.txt || { pack; exit 3; }
echo "flashinfer ready $(el) s"
python3 -c "import numpy as np; z = np.load('traces/attention/codegqa_16k_h100_2026-11-22.npz'); np.save('/tmp/toplib/scores_codegqa_16k.npy', z['measure.gvr_rows'])"
md5sum /tmp/toplib/scores_codegqa_16k.npy >> $O/env.txt
cd lab/kernels
export PYTHONPATH=$PWD:$PYTHONPATH
timeout 400 python3 measure_topk_engines.py --out $O --lib /tmp/toplib \
  --shapes ../../hwmodels/calibration/data/production_kernels/topk_flashinfer_h200_prediction_2026-11-28.csv \
  --tag fi_h200 --page-table 2>&1 | grep -v "^\s*$" | tee $O/log.txt | tail -6
cd ../..
pack
echo "all done $(el) s"
