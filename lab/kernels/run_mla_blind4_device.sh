#!/bin/bash
# device-side driver for the fourth MLA blind grid: install the carried wheels (flashinfer 0.6.4, sgl_flash_mla 1.0.0, as
# run_mla_blind3_device.sh), build FlashInfer's MLA JIT module, measure --grid mla_blind4 (fi_mla, flashmla), then the
# short batch-64 / 300 shapes again with a fresh Q per replay (--fresh-q: Q rotated with the K/V copies), CSVs to $OUT
cd "$(dirname "$0")"
mkdir -p /tmp/whl && tar -xJf w.tar.xz -C /tmp || exit 3
for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/whl/*.whl || exit 3
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1 MAX_JOBS=16
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/nvidia-smi.txt
python3 measure_production_attention.py --out $OUT --grid mla_blind4 --tag _blind4 --parts build,fi_mla,flashmla --budget-s 110 2>&1 | grep -v "^\s*$" | tail -12
python3 measure_production_attention.py --out $OUT --grid mla_blind4 --tag _blind4_freshq --parts fi_mla,flashmla --fresh-q --only-bt 64:24,64:72,64:176,300:48 --budget-s 40 2>&1 | grep -v "^\s*$" | tail -6
ls -la $OUT
