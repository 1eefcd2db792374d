#!/bin/bash
# device-side driver, second call of the tile-rate scan (as .dev/<folder>/run2.sh beside run_fi_tc_scan12_device.sh's files): the tile-rate scan alone (the first call's scan CSV did not come back: too many files under $OUT)
cd "$(dirname "$0")"
mkdir -p /tmp/whl && tar -xJf w.tar.xz -C /tmp || exit 3
for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/whl/*.whl || exit 3
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1 MAX_JOBS=16
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/nvidia-smi.txt
python3 measure_production_attention.py --out $OUT --tag _scan12 --grid fi_tc_scan12 --parts build,fi_verify --budget-s 150 2>&1 | grep -v "^\s*$" | tail -10
ls -la $OUT
