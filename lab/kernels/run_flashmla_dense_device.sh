#!/bin/bash
# FLASHMLA'S DENSE DECODE OVER AN FP8 CACHE (vLLM's FLASHMLA backend with kv_cache_dtype fp8 on SM90) and bf16 controls
# on one H200: lab/kernels/measure_flashmla_dense.py at the committed prediction's shapes, then again (TAG_replicate).
# The kernel: sgl_flash_mla 1.0.0's _C_legacy.abi3.so from the package index, stripped (strip --strip-unneeded) and
# xz-compressed (3.8 MB), carried into /tmp/fmla/part.* of the warm machine: whole as part.00 (`cp .dev/fm/cl.so.xz
# /tmp/fmla/part.00` in the same call) since the traces' LZMA recompression left the travelling tree room for it, or in
# parts over earlier calls as before; S=/tmp/fmla/_C_legacy.abi3.so is assembled here once; its md5 in env.txt (4077cca0,
# smoke-run with the harness's script 3, 2026-11-29). From the repository root:
#   [P=<prediction in production_kernels/> TAG=<tag>] bash lab/kernels/run_flashmla_dense_device.sh  (with --spans since
#   the spans scan)
T0=$(date +%s)
P=hwmodels/calibration/data/production_kernels/${P:-flashmla_dense_fp8_h200_prediction_2026-11-29.csv}
S=/tmp/fmla/_C_legacy.abi3.so; O=/tmp/ofmd; TAG=${TAG:-fp8}
mkdir -p $O
[ -f $S ] || { cat /tmp/fmla/part.* | xz -dc > $S; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nproc; python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
  md5sum lab/kernels/measure_flashmla_dense.py $P $S; cat $0; } > $O/${TAG}_env.txt 2>&1
cd lab/kernels
export PYTHONUNBUFFERED=1
python3 measure_flashmla_dense.py --out $O --so $S --shapes ../../$P --tag $TAG --spans > $O/${TAG}_log.txt 2>&1
echo "first run rc $? at $(( $(date +%s) - T0 )) s"; tail -5 $O/${TAG}_log.txt
python3 measure_flashmla_dense.py --out $O --so $S --shapes ../../$P --tag ${TAG}_replicate > $O/${TAG}_replicate_log.txt 2>&1
echo "replicate rc $? at $(( $(date +%s) - T0 )) s"
cd ../..
tar -czf $OUT/flashmla_dense_$TAG.tgz -C $O .
rm -rf $O
