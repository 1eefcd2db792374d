#!/bin/bash
# device-side driver: SGLang's top-k (.so from lib/sgl_topk.cu @ 06c48ca8, sm_90a, md5 checked) and FlashInfer 0.6.4's
# top-k (wheel installed from w.tar.xz, its topk JIT module built for sm_90a) on the committed grid4 prediction's shapes
set -o pipefail
cd "$(dirname "$0")/../.."
D=.dev/s7tk
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/nvidia-smi.txt
SECONDS=0
mkdir -p /tmp/whl && tar -xJf $D/w.tar.xz -C /tmp || exit 3
for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/whl/*.whl || exit 3
echo "install seconds: $SECONDS"
export PYTHONPATH=lab/kernels:/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=16
L=$D/lib
md5sum $L/sgl_topk.so | tee $OUT/sgl_so_md5.txt
if ! python3 -c "import ctypes,torch,sys; torch.cuda.init(); l=ctypes.CDLL('$L/sgl_topk.so'); sys.exit(l.sgl_topk_setup())"; then
  echo "prebuilt .so did not load: rebuilding"; mkdir -p /tmp/sgllib && cp $L/scores_codegqa_16k.npy /tmp/sgllib/
  nvcc -O3 -std=c++17 -arch=sm_90a -shared -Xcompiler -fPIC -o /tmp/sgllib/sgl_topk.so $L/sgl_topk.cu || exit 4
  L=/tmp/sgllib
fi
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
timeout ${BUDGET:-420} python3 $D/measure_topk_engines.py --out $OUT --lib $L --shapes $D/grid4_prediction.csv "$@" 2>&1 | grep -v "^\s*$" | tee $OUT/log.txt | tail -40
echo "total seconds: $SECONDS" | tee -a $OUT/log.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/nvidia-smi.txt
echo rows: $(wc -l < $OUT/topk_engines_*_grid4.csv)
