#!/bin/bash
# device-side driver for the seventh MLA blind grid (FlashMLA only): run_mla_blind7_device.sh TARBALL. Installs the
# carried sgl_flash_mla 1.0.0 wheel (as run_mla_blind6_device.sh), then measures --grid mla_blind7 with the same Q every
# replay (as an engine's step leaves Q: written by the kernel just before, in L2); CSVs to $OUT
TAR=$1
cd "$(dirname "$0")"
mkdir -p /tmp/whl && tar -xJf "$TAR" -C /tmp || exit 3
for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/whl/*.whl || exit 3
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/nvidia-smi_flashmla.txt
python3 measure_production_attention.py --out $OUT --grid mla_blind7 --tag _blind7_flashmla --parts flashmla --budget-s 90 2>&1 | grep -v "^\s*$" | tail -8
ls -la $OUT
