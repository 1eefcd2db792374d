#!/bin/bash
# device-side driver: environment record, then the eighth Triton decode blind grid
# (lab/kernels/triton_decode_blind8.py: warm, cold (L2 flushed) and K/V-cold rows), CSVs to $OUT
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR=$PWD/tcache
{ date -u; nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv; python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"; } > $OUT/nvidia-smi.txt 2>&1
python3 triton_decode_blind8.py --out $OUT --budget-s ${BUDGET:-110} "$@" 2>&1 | grep -v "^\s*$" | tail -60
ls -la $OUT
