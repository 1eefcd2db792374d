#!/bin/bash
# THE H200 TENSORRT-LLM TOP-K GRIDS on one H200, one grid a call: TensorRT-LLM's top-k launches (trt_topk.so, built HERE
# from lab/kernels/trt_topk_launch.cu beside lab/kernels/ext/trt/trt_topk_kernels.cuh, a local transcription of
# indexerTopK.cu @ 07339e94 that is not part of this repository and travels as a carried ignored folder: trt_topk_launch
# = the kernel's own dispatch, trt_topk_prefill_launch = its prefill entry, trt_topk_op_launch = the torch op's), timed
# by measure_topk_engines.py --only-listed at the shapes and kernels of a committed prediction CSV, then the same run
# again on the warm machine (tag TAG_replicate). The recorded score rows (scores_codegqa_16k.npy) are written here from
# the shipped trace. Files packed into $OUT/topk_trt_h200.tgz (the device returns a limited number of files). From the
# repository root of the device copy:
#   bash lab/kernels/run_topk_trt_h200_device.sh [PREDICTION_CSV TAG]
# the grids of 2026-11-28 (production_kernels/...): topk_trtllm_h200_prediction_2026-11-28.csv trt_h200 (the default:
# simulator/calibration/topk_trtllm_h200.py, lab/kernels/predict_topk_trt_h200.py), topk_trtllm_h200_grid2_prediction_...
# trt_h200g2, and through run_topk_trt_op_device.sh / run_topk_trt_lone_device.sh the torch-op and lone grids
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
P=hwmodels/calibration/data/production_kernels/${1:-topk_trtllm_h200_prediction_2026-11-28.csv}
TG=${2:-trt_h200}
O=/tmp/otrt; mkdir -p $O /tmp/toplib /tmp/trt
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nvcc --version | tail -2; nproc
  md5sum lab/kernels/measure_topk_engines.py lab/kernels/trt_topk_launch.cu lab/kernels/ext/trt/trt_topk_kernels.cuh $P
  cat $0; } > $O/env.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $O/clocks.csv 2>/dev/null &
SMI=$!
pack() { kill $SMI 2>/dev/null; tar -czf $OUT/topk_trt_h200.tgz -C $O . ; echo "packed at $(el) s"; }
cp lab/kernels/trt_topk_launch.cu lab/kernels/ext/trt/trt_topk_kernels.cuh /tmp/trt/
( cd /tmp/trt && timeout 150 nvcc -O3 -std=c++17 -arch=sm_90a -shared -Xcompiler -fPIC -o trt_topk.so trt_topk_launch.cu ) \
  > $O/build.txt 2>&1
tail -5 $O/build.txt
[ -f /tmp/trt/trt_topk.so ] || { echo "no trt_topk.so"; pack; exit 4; }
echo "built at $(el) s"
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
$CUOBJ -res-usage /tmp/trt/trt_topk.so > $O/res_usage.txt 2>&1 || echo "cuobjdump failed" >> $O/res_usage.txt
python3 -c "import numpy as np; z = np.load('traces/attention/codegqa_16k_h100_2026-11-22.npz'); np.save('/tmp/toplib/scores_codegqa_16k.npy', z['measure.gvr_rows'])"
md5sum /tmp/toplib/scores_codegqa_16k.npy >> $O/env.txt
cd lab/kernels
export PYTHONPATH=$PWD:$PYTHONPATH
for TAG in $TG ${TG}_replicate; do
  timeout 230 python3 measure_topk_engines.py --out $O --lib /tmp/toplib --shapes ../../$P --tag $TAG \
    --trt-lib /tmp/trt/trt_topk.so --only-listed 2>&1 | grep -v "^\s*$" | tee $O/log_$TAG.txt | tail -5
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
