#!/bin/bash
# device-side driver of the XQA measurement (lab/kernels/measure_xqa_attention.py), run from a folder holding this
# script, the measurement script, lab/harness.py and lab/kernels/measure_production_attention.py copied beside it and
# w.tar.xz (the unpacked wheels, as .dev/i25fi2): install the carried wheels (flashinfer-python 0.6.4 and its small
# dependencies, as .dev/i25fi2/run.sh), JIT-build the port's XQA modules, measure, CSVs to $OUT
cd "$(dirname "$0")"
mkdir -p /tmp/whl && tar -xJf w.tar.xz -C /tmp || exit 3
for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/whl/*.whl || exit 3
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1 MAX_JOBS=16
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/nvidia-smi.txt
nvcc --version | tail -2 >> $OUT/nvidia-smi.txt
python3 measure_xqa_attention.py --out $OUT "$@" 2>&1 | grep -v "^\s*$" | grep -v "warning #\|Remark\|^\s*\^\|^ *if (\|^ *constexpr" | tail -60
ls -la $OUT
