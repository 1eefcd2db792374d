#!/bin/bash
# device-side driver of the tensor-core (FA2 prefill) tile-rate scan and the twelfth blind grid: install the carried
# FlashInfer 0.6.4 wheels, build the JIT modules (prefill bf16 and fp8 K/V; decode), measure --grid fi_tc_blind12
# (fi_verify, fi_tc; priced before this call) then --grid fi_tc_scan12 (the FIT rows); CSVs to $OUT; an SM-clock /
# power log (nvidia-smi query, read-only) beside it
cd "$(dirname "$0")"
mkdir -p /tmp/whl && tar -xJf w.tar.xz -C /tmp || exit 3
for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/whl/*.whl || exit 3
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1 MAX_JOBS=16
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/nvidia-smi.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $OUT/clocks.csv 2>/dev/null &
SMI=$!
SHAPE_TIMES=$OUT/shape_times.csv python3 measure_production_attention.py --out $OUT --tag _blind12 --grid fi_tc_blind12 --parts build,fi_verify,fi_tc --budget-s ${BUDGET:-200} 2>&1 | grep -v "^\s*$" | tail -14
SHAPE_TIMES=$OUT/shape_times.csv python3 measure_production_attention.py --out $OUT --tag _scan12 --grid fi_tc_scan12 --parts fi_verify --budget-s ${BUDGET2:-150} 2>&1 | grep -v "^\s*$" | tail -10
kill $SMI 2>/dev/null
date +%s.%N > $OUT/end_epoch.txt
ls -la $OUT
