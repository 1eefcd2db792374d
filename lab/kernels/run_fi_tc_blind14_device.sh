#!/bin/bash
# device-side driver of the fourteenth tensor-core blind grid (fi_verify, 39 shapes, priced before this call by main's
# model and the last-wave / merge-reload model): install the carried FlashInfer 0.6.4 wheels, build the JIT prefill modules, measure
# --grid fi_tc_blind14; CSVs to $OUT; an SM-clock / power log (nvidia-smi query, read-only) beside it
cd "$(dirname "$0")"
mkdir -p /tmp/whl && tar -xJf w.tar.xz -C /tmp || exit 3
for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/whl/*.whl || exit 3
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1 MAX_JOBS=16
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/nvidia-smi.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $OUT/clocks.csv 2>/dev/null &
SMI=$!
python3 measure_production_attention.py --out $OUT --tag _blind14 --grid fi_tc_blind14 --parts build,fi_verify --budget-s ${BUDGET:-110} 2>&1 | grep -v "^\s*$" | tail -14
kill $SMI 2>/dev/null
ls -la $OUT
