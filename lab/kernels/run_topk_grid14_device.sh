#!/bin/bash
# device-side driver (TensorRT-LLM grid14; usage: run_topk_grid14_device.sh grid14 grid14_prediction.csv): SGLang's top-k (lib/sgl_topk.so from topk.cu @ 06c48ca8) and TensorRT-LLM's decode top-k and prefill entry
# (trt/trt_topk.so, built from a local transcription of indexerTopK.cu @ 07339e94 with an own extern-C launcher; rebuilt
# here if it won't load); no FlashInfer (not installed: its rows are skipped)
set -o pipefail
# carried folder .dev/s16tk (copied from .dev/s15tk): measure_topk_engines.py (this folder), lib/ (sgl_topk.so, recorded rows), trt/ (trt_topk.so), grid14_prediction.csv
cd "$(dirname "$0")/../.."
D=.dev/s16tk
TAG=$1
SHAPES=$2
shift 2
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/nvidia-smi.txt
SECONDS=0
export PYTHONPATH=lab/kernels
L=$D/lib
md5sum $L/sgl_topk.so $D/trt/trt_topk.so | tee $OUT/so_md5.txt
if ! python3 -c "import ctypes,torch,sys; torch.cuda.init(); l=ctypes.CDLL('$L/sgl_topk.so'); sys.exit(l.sgl_topk_setup())"; then
  echo "prebuilt sgl .so did not load: rebuilding"; mkdir -p /tmp/sgllib && cp $L/scores_codegqa_16k.npy /tmp/sgllib/
  nvcc -O3 -std=c++17 -arch=sm_90a -shared -Xcompiler -fPIC -o /tmp/sgllib/sgl_topk.so $L/sgl_topk.cu || exit 4
  L=/tmp/sgllib
fi
TRT=$D/trt/trt_topk.so
if ! python3 -c "import ctypes; ctypes.CDLL('$TRT')"; then
  echo "prebuilt trt .so did not load: rebuilding"; mkdir -p /tmp/trt
  timeout 120 nvcc -O3 -std=c++17 -arch=sm_90a -shared -Xcompiler -fPIC -o /tmp/trt/trt_topk.so $D/trt/trt_topk_launch.cu && TRT=/tmp/trt/trt_topk.so
fi
echo "setup seconds: $SECONDS"
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
$CUOBJ -res-usage $TRT > $OUT/res_usage.txt 2>&1 || echo "cuobjdump failed" >> $OUT/res_usage.txt
python3 - "$OUT/res_usage.txt" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
for a, b in zip(lines, lines[1:] + [""]):
    if "Function" in a and "REG" in b:
        print("RES", re.sub(r"\s+", " ", a)[-90:], "|", re.sub(r"\s+", " ", b)[:90])
PY
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
timeout ${BUDGET:-400} python3 $D/measure_topk_engines.py --out $OUT --lib $L --shapes $D/$SHAPES --tag $TAG --trt-lib $TRT --only-listed "$@" 2>&1 | grep -v "^\s*$" | tee $OUT/log.txt | tail -12
echo "total seconds: $SECONDS" | tee -a $OUT/log.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/nvidia-smi.txt
export TAG
echo rows: $(wc -l < $OUT/topk_engines_*_$TAG.csv)
python3 - <<'PY'
import collections, csv, glob, os
f = glob.glob(os.environ["OUT"] + "/*" + os.environ["TAG"] + ".csv")
r = list(csv.DictReader(open(f[0]))) if f else []
print(dict(collections.Counter(x["kernel"] for x in r)), "wrong:", sum("WRONG" in x["note"] for x in r))
for x in r:
    if x["kernel"] != "sgl_topk": print(x["kernel"], x["dist"], x["rows"], x["n"], x["median_us"], x["note"])
PY
