#!/bin/bash
# THE DSA INDEXER'S MTP ROWS GRID (priced before the call: lab/kernels/predict_deepgemm_indexer_mtp.py ->
# hwmodels/calibration/data/production_kernels/deepgemm_indexer_mtp_prediction_2026-11-29.csv): DeepGEMM's
# fp8_paged_mqa_logits with an MTP step's rows flattened into sequences of next_n 1 sharing their request's block table
# (measure_deepgemm_indexer.py --grid, the grid's `expand` column), on the lent H200, by the device command of the
# earlier indexer grids (run_deepgemm_indexer_device.sh: DeepGEMM 54e2261's host code built here against the machine's
# PyTorch, link mode own_libstdcxx; kernels JIT-compiled by nvcc on first use). The source tarball (W/dgsrc.tar.xz,
# never committed) is made by lab/kernels/prepare_dg_source.py; its md5 is in env.txt. A second run on the same warm
# machine (TAG=replicate) reuses the build and JIT caches. Files packed into $OUT/indexer_mtp.tgz. From the repository
# root of the device copy:   W=.dev/dg [TAG=replicate] [GRID=deepgemm_indexer_mtp2_grid.csv] bash lab/kernels/run_deepgemm_indexer_mtp_device.sh
T0=$(date +%s)
W=$(realpath ${W:-.dev/dg})
TAG=${TAG:-first}
O=/tmp/oMTP; D=/tmp/dgw/kernels; mkdir -p $O $D
cp lab/kernels/measure_deepgemm_indexer.py lab/kernels/dg_upstream.py lab/kernels/_timing.py \
   lab/kernels/run_deepgemm_indexer_device.sh lab/kernels/deepgemm_indexer_mtp_grid.csv \
   lab/kernels/deepgemm_indexer_mtp2_grid.csv lab/kernels/deepgemm_indexer_mtp3_grid.csv \
   lab/kernels/deepgemm_indexer_mtp3_diag_grid.csv lab/kernels/deepgemm_indexer_mtp4_grid.csv $D/
cp lab/harness.py /tmp/dgw/
[ -f $D/dgsrc.tar.xz ] || cp $W/dgsrc.tar.xz $D/
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nvcc --version | tail -2; gcc --version | head -1; nproc
  python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
  md5sum $D/* /tmp/dgw/harness.py; cat $0; } > $O/env_$TAG.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $O/clocks_$TAG.csv 2>/dev/null &
SMI=$!
cd $D
export PYTHONUNBUFFERED=1 CUDA_HOME=${CUDA_HOME:-/usr/local/cuda} MAX_JOBS=16 DG_JIT_CACHE_DIR=/tmp/dg_jit \
  DG_BUILD_DIR=/tmp/dg_build DG_LINK_MODES=own_libstdcxx
timeout $(( ${BUDGET:-540} - ($(date +%s) - T0) )) bash run_deepgemm_indexer_device.sh $O/$TAG \
  --grid ${GRID:-deepgemm_indexer_mtp_grid.csv} --part decode > $O/run_$TAG.log 2>&1
echo "rc=$? at $(( $(date +%s) - T0 )) s"; tail -16 $O/run_$TAG.log
kill $SMI 2>/dev/null
tar -czf $OUT/indexer_mtp.tgz -C $O .
