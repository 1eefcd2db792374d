#!/bin/bash
# (copied beside lab/kernels/sgl_triton_blind4.py, sgl_triton_fit6.py, sgl_triton_blind6.py, measure_production_attention.py, lab/harness.py and ext/ -- the kernel source copy, sglang 0.5.6 decode_attention.py, never committed -- in a carried folder; run there: BUDGET=40 ./run.sh fit6, then BUDGET=35 BUDGET2=12 ./run.sh blind6)
# device-side driver of sgl_triton's sixth campaign: environment record, then ./run.sh fit6 (the fit rows,
# sgl_triton_fit6.py) or ./run.sh blind6 (the blind grid, sgl_triton_blind6.py); CSVs to $OUT
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR=$PWD/tcache
{ date -u; nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv; python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"; } > $OUT/nvidia-smi.txt 2>&1
python3 sgl_triton_$1.py --out $OUT --budget-s ${BUDGET:-40} 2>&1 | grep -v "^\s*$" | tail -60
[ -n "$BUDGET2" ] && python3 sgl_triton_$1.py --out $OUT/rep --budget-s $BUDGET2 2>&1 | tail -2
ls -la $OUT
