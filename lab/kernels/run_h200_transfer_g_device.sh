#!/bin/bash
# THE H200 TRANSFER GRID, part G (priced before the call: lab/kernels/predict_h200_deepgemm_gemm.py ->
# hwmodels/calibration/data/production_kernels/h200_transfer_g_predictions.csv and the call's grid h200_transfer_g_grid.csv):
# DeepGEMM's block-scaled fp8 GEMM, the H100's DeepGEMM rows of block grid 8 and of the decode-3 grid re-run on the lent
# H200 by the same device command (run_deepgemm_gemm_device.sh: DeepGEMM 54e2261's gemm / layout / runtime host code
# built here against the machine's PyTorch, link mode own_libstdcxx; kernels JIT-compiled by 14 workers first). The
# source tarball (W/dgsrc.tar.xz, never committed) is lab/kernels/prepare_dg_source.py's; its md5 is in env.txt.
# Resumable on a warm machine (a measured tag is skipped; build and JIT caches reused). /tmp/oG is packed into
# $OUT/h200_transfer_G.tgz after each step. From the repository root of the device copy:
#   W=.dev/dg TAG=h200g bash lab/kernels/run_h200_transfer_g_device.sh
# The blind follow-up grid (lab/kernels/predict_h200_dg_blind.py) runs through the same script with
#   GRIDF=h200_dg_blind_grid.csv TAG=h200dgb
T0=$(date +%s)
W=$(realpath ${W:-.dev/dg}); TAG=${TAG:-h200g}; GRIDF=${GRIDF:-h200_transfer_g_grid.csv}
el() { echo $(( $(date +%s) - T0 )); }
O=/tmp/oG; D=/tmp/dgw/kernels; mkdir -p $O $D
cp lab/kernels/measure_deepgemm_gemm.py lab/kernels/dg_upstream.py lab/kernels/_timing.py \
   lab/kernels/run_deepgemm_gemm_device.sh hwmodels/calibration/data/production_kernels/$GRIDF \
   lab/harness.py $D/
cp lab/harness.py /tmp/dgw/
cp $W/dgsrc.tar.xz $D/
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nvcc --version | tail -2; gcc --version | head -1; nproc
  python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
  md5sum $D/* /tmp/dgw/harness.py; cat $0; } >> $O/env.txt 2>&1
pack() { tar -czf $OUT/h200_transfer_G.tgz --exclude='*.so.xz' -C $O . ; echo "packed $1 at $(el) s"; }
cd $D
if ! ls $O/$TAG/deepgemm_gemm_${TAG}_*.csv > /dev/null 2>&1; then
  timeout $(( ${BUDGET:-560} - $(el) )) bash run_deepgemm_gemm_device.sh $O/$TAG $GRIDF 14 $TAG \
    > $O/${TAG}_run.log 2>&1; echo "$TAG rc=$? at $(el) s"; grep -v "^\s*$" $O/${TAG}_run.log | tail -5
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $O/env.txt
pack end
