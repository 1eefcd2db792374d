#!/bin/bash
# THE H200 TRANSFER GRID, part C (priced before the call: lab/kernels/predict_h200_transfer.py --part C ->
# hwmodels/calibration/data/production_attention/h200_transfer_c_predictions.csv): the newest H100 blind grids of XQA
# (FlashInfer's port, --grid x18), FlashInfer MLA (mla_blind6, fi_mla rows) and FlashInfer top-k (grid 12's shapes, ragged
# and page-table transforms) re-run on the lent H200 by the same scripts and flags. FlashInfer 0.6.4 from the carried
# wheels (lab/kernels/_flashinfer_site.sh); the recorded score rows for top-k (scores_codegqa_16k.npy) written here from
# the tracked trace (traces/attention/codegqa_16k_h100_2026-11-22.npz, measure.gvr_rows), as the H100 grid's were. Every
# part's files are packed into $OUT/h200_transfer_C.tgz after it. From the repository root of the device copy:
#   W=.dev/h200 bash lab/kernels/run_h200_transfer_c_device.sh
T0=$(date +%s)
W=${W:-.dev/h200}
el() { echo $(( $(date +%s) - T0 )); }
O=/tmp/oC; mkdir -p $O/topk12 /tmp/toplib   # topk12/: measure_topk_engines.py makes no --out (the first call's top-k part failed on it)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nvcc --version | tail -2; nproc
  md5sum lab/kernels/measure_xqa_attention.py lab/kernels/measure_production_attention.py lab/kernels/measure_topk_engines.py \
    lab/kernels/measure_production_kernels.py lab/kernels/_timing.py lab/harness.py lab/kernels/_flashinfer_site.sh \
    traces/attention/codegqa_16k_h100_2026-11-22.npz $W/*; cat $0; } > $O/env.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $O/clocks.csv 2>/dev/null &
SMI=$!
pack() { tar -czf $OUT/h200_transfer_C.tgz -C $O . ; echo "packed $1 at $(el) s"; }
python3 -c "import numpy as np; z = np.load('traces/attention/codegqa_16k_h100_2026-11-22.npz'); np.save('/tmp/toplib/scores_codegqa_16k.npy', z['measure.gvr_rows'])"
md5sum /tmp/toplib/scores_codegqa_16k.npy >> $O/env.txt
. lab/kernels/_flashinfer_site.sh
flashinfer_site $W $O/env.txt || { pack install; exit 3; }
echo "flashinfer ready $(el) s"
F='warning #\|Remark\|^\s*\^\|^ *if (\|^ *constexpr'
cd lab/kernels
mkdir -p $O/xqa18
timeout 200 python3 measure_xqa_attention.py --out $O/xqa18 --build --grid x18 --budget-s 120 2>&1 | grep -v "^\s*$" | grep -v "$F" | tail -3
echo "xqa18 done $(el) s"; pack xqa18
timeout 200 python3 measure_production_attention.py --out $O/fi_mla6 --grid mla_blind6 --tag _blind6_fi_mla --parts build,fi_mla \
  --budget-s 120 2>&1 | grep -v "^\s*$" | grep -v "$F" | tail -3
echo "fi_mla6 done $(el) s"; pack fi_mla6
export PYTHONPATH=$PWD:$PYTHONPATH
timeout $(( 560 - $(el) )) python3 measure_topk_engines.py --out $O/topk12 --lib /tmp/toplib \
  --shapes ../../hwmodels/calibration/data/production_kernels/topk_flashinfer_grid12_prediction_2026-11-27.csv --tag figrid12 \
  --page-table 2>&1 | grep -v "^\s*$" | tail -3
echo "topk12 done $(el) s"; kill $SMI 2>/dev/null; pack topk12
