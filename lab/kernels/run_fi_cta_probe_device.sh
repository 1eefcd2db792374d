#!/bin/bash
# device-side driver of the CUDA-core decode CTA probe (lab/kernels/probe_fi_decode_ctas.py): install the carried
# FlashInfer 0.6.4 wheels into /tmp/site, patch that copy's decode / merge headers with per-CTA records, JIT-build the
# bf16 decode module and probe the shapes; CSVs to $OUT, an SM-clock / power log (read-only nvidia-smi query) beside them
# (runs from a copy: .dev/<folder>/ with this file as run.sh, probe_fi_decode_ctas.py,
# lab/kernels/measure_production_attention.py, lab/harness.py and the wheel tarball w.tar.xz beside it)
cd "$(dirname "$0")"
mkdir -p /tmp/whl && tar -xJf w.tar.xz -C /tmp || exit 3
for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/whl/*.whl || exit 3
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1 MAX_JOBS=16
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/nvidia-smi.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $OUT/clocks.csv 2>/dev/null &
SMI=$!
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
nvcc --version 2>/dev/null | tail -1
timeout 420 python3 probe_fi_decode_ctas.py --out $OUT "$@" 2>&1 | grep -v "^\s*$" | tail -40
kill $SMI 2>/dev/null
ls -la $OUT
