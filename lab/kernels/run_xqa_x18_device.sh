#!/bin/bash
# device driver: install the carried wheels (as run_xqa_device.sh), then the eighteenth xqa blind grid in one run
# (measure_xqa_attention.py --grid x18: per JIT build, its rows; bf16 q 1, bf16 q 2)
cd "$(dirname "$0")"
if [ ! -d /tmp/site/flashinfer ]; then mkdir -p /tmp/whl && tar -xJf w.tar.xz -C /tmp || exit 3
for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/whl/*.whl || exit 3; fi
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1 MAX_JOBS=16
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/nvidia-smi.txt
nvcc --version | tail -2 >> $OUT/nvidia-smi.txt
F='warning #\|Remark\|^\s*\^\|^ *if (\|^ *constexpr'
mkdir -p $OUT/x18
timeout 105 python3 measure_xqa_attention.py --out $OUT/x18 --build --grid x18 --budget-s ${X18_BUDGET_S:-80} 2>&1 | grep -v "^\s*$" | grep -v "$F" | tail -30
cut -d, -f9,10,14,15,16,18,24,25,26 $OUT/x18/xqa_attention.csv | head -40
