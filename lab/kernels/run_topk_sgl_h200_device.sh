#!/bin/bash
# THE H200 SGLANG TOP-K GRID on one H200: SGLang's sgl-kernel top-k (sgl_topk.so, built HERE from
# lab/kernels/ext/sgl/sgl_topk.cu, a local transcription of sgl-kernel/csrc/elementwise/topk.cu @ 06c48ca8 that is not
# part of this repository and travels as a carried ignored folder: one 1024-thread CTA a row, 128 KiB of dynamic shared
# memory, fast_topk's decode launch), timed by measure_topk_engines.py --only-listed at the shapes of the committed
# prediction (simulator/calibration/topk_sglang_h200.py, lab/kernels/predict_topk_sgl_h200.py ->
# production_kernels/topk_sglang_h200_prediction_2026-11-28.csv), then the same run again on the warm machine (tag
# sgl_h200_replicate). The recorded score rows (scores_codegqa_16k.npy) are written here from the shipped trace. Files
# packed into $OUT/topk_<TAG>.tgz. From the repository root of the device copy:
#   bash lab/kernels/run_topk_sgl_h200_device.sh [PREDICTION_CSV TAG]
# the grids of 2026-11-28 (production_kernels/...): topk_sglang_h200_prediction_2026-11-28.csv sgl_h200 (the default),
# topk_sglang_h200_fit_prediction_2026-11-28.csv sgl_h200fit (the H200's own fit rows, topk_sglang_h200.FIT_SHAPES)
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
P=hwmodels/calibration/data/production_kernels/${1:-topk_sglang_h200_prediction_2026-11-28.csv}
TG=${2:-sgl_h200}
O=/tmp/osgl; mkdir -p $O /tmp/toplib /tmp/sgl
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nvcc --version | tail -2; nproc
  md5sum lab/kernels/measure_topk_engines.py lab/kernels/ext/sgl/sgl_topk.cu $P
  cat $0; } > $O/env.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $O/clocks.csv 2>/dev/null &
SMI=$!
pack() { kill $SMI 2>/dev/null; tar -czf $OUT/topk_${TG}.tgz -C $O . ; echo "packed at $(el) s"; }
cp lab/kernels/ext/sgl/sgl_topk.cu /tmp/sgl/
( cd /tmp/sgl && timeout 150 nvcc -O3 -std=c++17 -arch=sm_90a -shared -Xcompiler -fPIC -Xptxas -v -o /tmp/toplib/sgl_topk.so sgl_topk.cu ) \
  > $O/build.txt 2>&1
tail -5 $O/build.txt
[ -f /tmp/toplib/sgl_topk.so ] || { echo "no sgl_topk.so"; pack; exit 4; }
echo "built at $(el) s"
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
$CUOBJ -res-usage /tmp/toplib/sgl_topk.so > $O/res_usage.txt 2>&1 || echo "cuobjdump failed" >> $O/res_usage.txt
python3 -c "import numpy as np; z = np.load('traces/attention/codegqa_16k_h100_2026-11-22.npz'); np.save('/tmp/toplib/scores_codegqa_16k.npy', z['measure.gvr_rows'])"
md5sum /tmp/toplib/scores_codegqa_16k.npy /tmp/toplib/sgl_topk.so >> $O/env.txt
cd lab/kernels
export PYTHONPATH=$PWD:$PYTHONPATH
for TAG in $TG ${TG}_replicate; do
  timeout 240 python3 measure_topk_engines.py --out $O --lib /tmp/toplib --shapes ../../$P --tag $TAG \
    --only-listed 2>&1 | grep -v "^\s*$" | tee $O/log_$TAG.txt | tail -5
  echo "$TAG done at $(el) s"
done
cd ../..
pack
python3 - "$O" "$TG" <<'PY'
import csv, glob, sys
for f in sorted(glob.glob(sys.argv[1] + "/topk_engines_*" + sys.argv[2] + "*.csv")):
    r = list(csv.DictReader(open(f)))
    print(f.rsplit("/", 1)[1], len(r), "rows; wrong:", sum("WRONG" in x["note"] for x in r))
PY
echo "all done $(el) s"
