#!/bin/bash
# FLASHMLA'S SPARSE DECODE on one H200 (lab/kernels/measure_flashmla_sparse.py at the shapes of the committed prediction
# production_kernels/flashmla_sparse_h200_prediction_2026-11-28.csv). The kernel: sgl_flash_mla 1.0.0's _C_legacy.abi3.so
# (the wheel from the package index; md5 in env.txt), staged on the warm machine as $S (xz parts carried over earlier
# calls: the working tree's size limit). Files packed into $OUT/flashmla_sparse.tgz. From the repository root:
#   S=/tmp/fmla/_C_legacy.abi3.so bash lab/kernels/run_flashmla_sparse_device.sh [--tag TAG]
# (P=... for another prediction: flashmla_sparse_h200_grid2_prediction_2026-11-28.csv with --tag grid2)
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
P=hwmodels/calibration/data/production_kernels/${P:-flashmla_sparse_h200_prediction_2026-11-28.csv}
O=/tmp/ofms; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nproc; python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
  md5sum lab/kernels/measure_flashmla_sparse.py $P $S; cat $0; } > $O/env.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $O/clocks.csv 2>/dev/null &
SMI=$!
cd lab/kernels
export PYTHONPATH=$PWD:$PYTHONPATH PYTHONUNBUFFERED=1
timeout 420 python3 measure_flashmla_sparse.py --out $O --so $S --shapes ../../$P --tag grid1 "$@" 2>&1 | tee $O/log.txt | tail -12
cd ../..
kill $SMI 2>/dev/null
tar -czf $OUT/flashmla_sparse.tgz -C $O .
echo "all done $(el) s"
