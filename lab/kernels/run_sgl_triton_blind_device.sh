#!/bin/bash
# (copied beside lab/kernels/sgl_triton_blind4.py, sgl_triton_blind5.py, measure_production_attention.py, lab/harness.py and ext/ -- the kernel's source copy, sglang 0.5.6 decode_attention.py, never committed -- in a carried folder; run there: BUDGET=90 BUDGET2=40 ./run.sh 4, then BUDGET=60 BUDGET2=30 ./run.sh 5)
# device-side driver: environment record, then sgl_triton blind grid 4 or 5, CSVs to $OUT; then the same rows once more (a repeat, $OUT/rep)
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR=$PWD/tcache
G=${1:-4}
{ date -u; nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv; python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"; } > $OUT/nvidia-smi.txt 2>&1
python3 sgl_triton_blind$G.py --out $OUT --budget-s ${BUDGET:-90} 2>&1 | grep -v "^\s*$" | tail -60
python3 sgl_triton_blind$G.py --out $OUT/rep --budget-s ${BUDGET2:-40} 2>&1 | tail -2
ls -la $OUT $OUT/rep
