#!/bin/bash
# device-side driver for the sixth MLA blind grid, one family per call (the lead's tree and both families' wheels exceed
# what one call may carry): run_mla_blind6_device.sh fi_mla|flashmla TARBALL. Installs the carried wheels (fi_mla:
# flashinfer 0.6.4 + apache-tvm-ffi 0.1.9 and their pure-Python deps; flashmla: sgl_flash_mla 1.0.0; as
# run_mla_blind5_device.sh), builds FlashInfer's MLA JIT module (fi_mla), measures --grid mla_blind6 for that family with
# the same Q every replay (as an engine's step leaves Q: written by the kernel just before, in L2), then every shape
# again with a fresh Q per replay (--fresh-q); CSVs to $OUT
PART=$1; TAR=$2
cd "$(dirname "$0")"
mkdir -p /tmp/whl && tar -xJf "$TAR" -C /tmp || exit 3
for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/whl/*.whl || exit 3
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1 MAX_JOBS=16
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/nvidia-smi_$PART.txt
B=$PART; [ "$PART" = fi_mla ] && B=build,fi_mla
python3 measure_production_attention.py --out $OUT --grid mla_blind6 --tag _blind6_$PART --parts $B --budget-s 60 2>&1 | grep -v "^\s*$" | tail -8
python3 measure_production_attention.py --out $OUT --grid mla_blind6 --tag _blind6_freshq_$PART --parts $PART --fresh-q --budget-s 40 2>&1 | grep -v "^\s*$" | tail -4
ls -la $OUT
