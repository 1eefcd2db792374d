#!/bin/bash
# device-side driver (TensorRT-LLM grid22; usage: run_topk_grid22_device.sh grid22 grid22_prediction.csv): TensorRT-LLM's
# decode top-k and prefill entry (trt_topk.so, built HERE from lab/kernels/trt_topk_launch.cu beside a local
# transcription of indexerTopK.cu @ 07339e94, trt/trt_topk_kernels.cuh, not part of this repository); no SGLang (its
# .so was not rebuilt), no FlashInfer (not installed: its rows are skipped)
set -o pipefail
# carried folder .dev/s24tk: measure_topk_engines.py (this folder; _timing.py and measure_production_kernels.py from
# the checkout's lab/kernels, on PYTHONPATH, whose _timing finds lab/harness.py),
# lib/scores_codegqa_16k.npy (the recorded rows: measure.gvr_rows of traces/attention/codegqa_16k_h100_2026-11-22.npz),
# trt/ (trt_topk_launch.cu, trt_topk_kernels.cuh), grid22_prediction.csv
cd "$(dirname "$0")/../.."
D=.dev/s24tk
TAG=$1
SHAPES=$2
shift 2
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/nvidia-smi.txt
SECONDS=0
export PYTHONPATH=lab/kernels
md5sum $D/trt/trt_topk_launch.cu $D/trt/trt_topk_kernels.cuh $D/lib/scores_codegqa_16k.npy | tee $OUT/src_md5.txt
mkdir -p /tmp/trt
TRT=/tmp/trt/trt_topk.so
timeout ${NVCC_BUDGET:-90} nvcc -O3 -std=c++17 -arch=sm_90a -shared -Xcompiler -fPIC -o $TRT $D/trt/trt_topk_launch.cu 2>&1 | tail -5 || { echo "nvcc failed"; exit 4; }
[ -f $TRT ] || { echo "no .so"; exit 4; }
echo "build seconds: $SECONDS"
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
timeout $(( ${BUDGET:-110} - SECONDS > 10 ? ${BUDGET:-110} - SECONDS : 10 )) python3 $D/measure_topk_engines.py --out $OUT --lib $D/lib --shapes $D/$SHAPES --tag $TAG --trt-lib $TRT --only-listed "$@" 2>&1 | grep -v "^\s*$" | tee $OUT/log.txt | tail -8
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
    print(x["kernel"], x["dist"], x["rows"], x["n"], x["median_us"], x["note"])
PY
