#!/bin/bash
# (copied beside lab/kernels/triton_decode_blind3.py, harness.py, measure_production_attention.py and ext/ -- the kernels' source copies, never committed -- in a carried folder; run there: BUDGET=110 ./run.sh)
# device-side driver: environment record, then the K/V page-layout diagnosis and the third Triton decode blind grid
# (triton_vllm + sgl_triton), CSVs to $OUT
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
{ date -u; nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv; python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"; } > $OUT/nvidia-smi.txt 2>&1
python3 triton_decode_blind3.py --out $OUT --budget-s ${BUDGET:-95} "$@" 2>&1 | grep -v "^\s*$" | tail -45
ls -la $OUT
