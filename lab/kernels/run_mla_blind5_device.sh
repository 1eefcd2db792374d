#!/bin/bash
# device-side driver for the fifth MLA blind grid, one family per call (the lead's tree and both families' wheels exceed
# what one call may carry): run_mla_blind5_device.sh fi_mla|flashmla TARBALL. Installs the carried wheels (fi_mla:
# flashinfer 0.6.4 + apache-tvm-ffi 0.1.9 and their pure-Python deps, trimmed of sources the MLA JIT module does not
# compile; flashmla: sgl_flash_mla 1.0.0; as the fourth grid's driver, run_mla_blind4_device.sh), builds FlashInfer's MLA
# JIT module (fi_mla), measures --grid mla_blind5 for that family, then its short batch-24..256 shapes again with a
# fresh Q per replay (--fresh-q); CSVs to $OUT
PART=$1; TAR=$2
cd "$(dirname "$0")"
mkdir -p /tmp/whl && tar -xJf "$TAR" -C /tmp || exit 3
for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/whl/*.whl || exit 3
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1 MAX_JOBS=16
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/nvidia-smi_$PART.txt
B=$PART; [ "$PART" = fi_mla ] && B=build,fi_mla
python3 measure_production_attention.py --out $OUT --grid mla_blind5 --tag _blind5_$PART --parts $B --budget-s 70 2>&1 | grep -v "^\s*$" | tail -8
python3 measure_production_attention.py --out $OUT --grid mla_blind5 --tag _blind5_freshq_$PART --parts $PART --fresh-q --only-bt 24:16,64:40,96:88,256:32 --budget-s 15 2>&1 | grep -v "^\s*$" | tail -4
ls -la $OUT
