#!/bin/bash
# device driver of the cold-K/V grid: install the carried wheels (FlashInfer 0.6.4 + apache-tvm-ffi and small deps),
# sgl_flash_mla 1.0.0), then measure_attention_cold.py (every shape warm, then cold); CSV + log to $OUT
cd "$(dirname "$0")"
mkdir -p /tmp/whl && tar -xJf fi.tar.xz -C /tmp || exit 3
for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/whl/*.whl || exit 3
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1 MAX_JOBS=16
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/nvidia-smi.txt
nvcc --version | tail -2 >> $OUT/nvidia-smi.txt
F='warning #\|Remark\|^\s*\^\|^ *if (\|^ *constexpr'
python3 measure_attention_cold.py --out $OUT "$@" 2>&1 | grep -v "^\s*$" | grep -v "$F" | tail -30
python3 - <<'PY'
import csv, os
rows = list(csv.DictReader(open(os.environ["OUT"] + "/attention_cold.csv")))
by = {}
for r in rows:
    k = (r["family"], r["model"], r["dtype"], r["batch"], r["context"], r["role"])
    by.setdefault(k, {})[r["mode"]] = r["median_us"]
for k, v in by.items():
    w, c = v.get("warm", ""), v.get("cold", "")
    ratio = f"{float(c) / float(w):.2f}" if w and c else "-"
    print(*k, w, c, ratio)
PY
