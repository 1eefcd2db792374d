#!/bin/bash
# device-side driver (FlashInfer top-k grid 12): FlashInfer 0.6.4's ragged and page-table transforms (wheel from
# w.tar.xz, top-k JIT module built for sm_90a) at the shapes of the committed grid 12 prediction; no SGLang / TensorRT-LLM
# (lib/ holds only the recorded score rows, scores_codegqa_16k.npy = traces/attention/codegqa_16k_h100_2026-11-22.npz
# measure.gvr_rows)
# carried folder .dev/s23fi: measure_topk_engines.py (lab/kernels, unchanged), w.tar.xz, lib/scores_codegqa_16k.npy,
# figrid12_prediction.csv, figrid12_shapes.csv (= the prediction: every n > 2048, torch.topk, the harness's selection check, needs n >= k)
set -o pipefail
cd "$(dirname "$0")/../.."
D=${D:-.dev/s23fi}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/nvidia-smi.txt
SECONDS=0
mkdir -p /tmp/whl && tar -xJf $D/w.tar.xz -C /tmp || exit 3
for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/whl/*.whl || exit 3
echo "install seconds: $SECONDS"
export PYTHONPATH=lab/kernels:/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=16
md5sum $D/measure_topk_engines.py $D/figrid12_prediction.csv $D/${SHAPES:-figrid12_shapes.csv} | tee $OUT/md5.txt
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
timeout ${BUDGET:-130} python3 $D/measure_topk_engines.py --out $OUT --lib $D/lib --shapes $D/${SHAPES:-figrid12_shapes.csv} --tag figrid12 --page-table "$@" 2>&1 | grep -v "^\s*$" | tee $OUT/log.txt | tail -8
echo "total seconds: $SECONDS" | tee -a $OUT/log.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/nvidia-smi.txt
python3 - <<'PY'
import collections, csv, glob, os
f = glob.glob(os.environ["OUT"] + "/*figrid12.csv")
r = list(csv.DictReader(open(f[0]))) if f else []
print("rows", len(r), dict(collections.Counter(x["kernel"] for x in r)), "wrong:", sum("WRONG" in x["note"] for x in r))
PY
