#!/bin/bash
# FLASHINFER'S TOP-K OVER WHOLE CAUSAL PROMPTS on one H200: FlashInfer 0.6.4's ragged transform (kernel fi_topk_tri of
# measure_topk_engines.py --only-listed) at the prompts of the committed prediction
# (simulator/calibration/topk_flashinfer_causal_h200.py, lab/kernels/predict_topk_fi_h200.py --causal ->
# production_kernels/topk_flashinfer_h200_causal_prediction_2026-11-28.csv), then again on the warm machine (tag
# fi_causal_replicate). FlashInfer from the carried wheels in $W (lab/kernels/_flashinfer_site.sh: w.tar.xz = the
# flashinfer-python 0.6.4 and apache-tvm-ffi 0.1.9 cp312 wheels unpacked, aot.tar.xz = an empty aot/ folder: no
# prebuilt module is needed, the top-k module is built just in time); the recorded score rows written here from the
# shipped trace. Files packed into $OUT/topk_fi_causal.tgz. From the repository root of the device copy:
#   W=.dev/fisw bash lab/kernels/run_topk_fi_causal_h200_device.sh
T0=$(date +%s)
W=${W:-.dev/fisw}
el() { echo $(( $(date +%s) - T0 )); }
P=hwmodels/calibration/data/production_kernels/topk_flashinfer_h200_causal_prediction_2026-11-28.csv
O=/tmp/ofic; mkdir -p $O /tmp/toplib
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nproc; md5sum lab/kernels/measure_topk_engines.py lab/kernels/_flashinfer_site.sh $P $W/*.xz; cat $0; } > $O/env.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $O/clocks.csv 2>/dev/null &
SMI=$!
pack() { kill $SMI 2>/dev/null; tar -czf $OUT/topk_fi_causal.tgz -C $O . ; echo "packed at $(el) s"; }
. lab/kernels/_flashinfer_site.sh
flashinfer_site $W $O/env.txt || { pack; exit 3; }
echo "flashinfer ready $(el) s"
python3 -c "import numpy as np; z = np.load('traces/attention/codegqa_16k_h100_2026-11-22.npz'); np.save('/tmp/toplib/scores_codegqa_16k.npy', z['measure.gvr_rows'])"
md5sum /tmp/toplib/scores_codegqa_16k.npy >> $O/env.txt
cd lab/kernels
export PYTHONPATH=$PWD:$PYTHONPATH
for TAG in fi_causal fi_causal_replicate; do
  timeout 240 python3 measure_topk_engines.py --out $O --lib /tmp/toplib --shapes ../../$P --tag $TAG --only-listed 2>&1 \
    | grep -v "^\s*$" | tee $O/log_$TAG.txt | tail -6
  echo "$TAG done at $(el) s"
done
cd ../..
pack
echo "all done $(el) s"
