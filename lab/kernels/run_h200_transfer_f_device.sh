#!/bin/bash
# THE H200 TRANSFER GRID, part F (priced before the call: lab/kernels/predict_h200_indexer.py ->
# hwmodels/calibration/data/production_kernels/h200_transfer_f_predictions.csv): DeepGEMM's DSA-indexer kernels, the
# H100's blind grids 4 (cold keys) and 3 (warm / cold decode, prefill) re-run on the lent H200 by the same script
# (measure_deepgemm_indexer.py --grid) and the same device command (run_deepgemm_indexer_device.sh: DeepGEMM 54e2261's
# host code built here against the machine's PyTorch, link mode own_libstdcxx, the mode that measured on the H100; kernels
# JIT-compiled by nvcc on first use). The source tarball (W/dgsrc.tar.xz, never committed) is made by
# lab/kernels/prepare_dg_source.py; its md5 is in env.txt. Resumable on a warm machine: a grid already measured in
# /tmp/oF is skipped, the build and JIT caches (/tmp/dg_build, /tmp/dg_jit) are reused. Everything under /tmp/oF is
# packed into $OUT/h200_transfer_F.tgz after each step. From the repository root of the device copy:
#   W=.dev/dg bash lab/kernels/run_h200_transfer_f_device.sh
T0=$(date +%s)
W=$(realpath ${W:-.dev/dg})
el() { echo $(( $(date +%s) - T0 )); }
O=/tmp/oF; D=/tmp/dgw/kernels; mkdir -p $O $D
cp lab/kernels/measure_deepgemm_indexer.py lab/kernels/dg_upstream.py lab/kernels/_timing.py \
   lab/kernels/run_deepgemm_indexer_device.sh lab/kernels/deepgemm_indexer_blind3_grid.csv \
   lab/kernels/deepgemm_indexer_blind4_grid.csv $D/
cp lab/harness.py /tmp/dgw/
cp $W/dgsrc.tar.xz $D/
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nvcc --version | tail -2; gcc --version | head -1; nproc
  python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
  md5sum $D/* /tmp/dgw/harness.py; cat $0; } >> $O/env.txt 2>&1
pack() { tar -czf $OUT/h200_transfer_F.tgz -C $O . ; echo "packed $1 at $(el) s"; }
cd $D
export PYTHONUNBUFFERED=1 CUDA_HOME=${CUDA_HOME:-/usr/local/cuda} MAX_JOBS=16 DG_JIT_CACHE_DIR=/tmp/dg_jit \
  DG_BUILD_DIR=/tmp/dg_build DG_LINK_MODES=own_libstdcxx
if [ ! -s $O/g4/deepgemm_indexer.csv ]; then
  timeout $(( ${BUDGET:-560} - $(el) )) bash run_deepgemm_indexer_device.sh $O/g4 --grid deepgemm_indexer_blind4_grid.csv \
    > $O/g4_run.log 2>&1; echo "g4 rc=$? at $(el) s"; tail -4 $O/g4_run.log
  pack g4
fi
if [ -s $O/g4/deepgemm_indexer.csv ] && [ ! -s $O/g3/deepgemm_indexer.csv ] && [ $(el) -lt $(( ${BUDGET:-560} - 60 )) ]; then
  mkdir -p dgsrc && tar -xJf dgsrc.tar.xz -C dgsrc
  DG_LINK_MODE=own_libstdcxx timeout $(( ${BUDGET:-560} - $(el) )) python3 -X faulthandler measure_deepgemm_indexer.py \
    --out $O/g3 --grid deepgemm_indexer_blind3_grid.csv > $O/g3_run.log 2>&1; echo "g3 rc=$? at $(el) s"
  tail -3 $O/g3_run.log
  pack g3
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $O/env.txt
pack end
