#!/bin/bash
# BLIND GRID 3 of the prefill rows (measure_prefill_kernels.py v3 --grid blind3, priced before the call:
# prefill_kernels_blind3_predictions.csv). A copy of run_prefill_kernels_blind2_device.sh, FA3 library carried when
# $W/fa3_C.abi3.so.gz is there. Prefill rows of FA3's hopper/ binary and FlashInfer's FA2 paged prefill on the lent H100, one call: build the trimmed FA3
# (build_fa3_binary.py from $W/src.tar.xz, prepare_fa3_source.sh's tree packed: flash-attention @ 0251105a, CUTLASS @ 71275920), return
# the library gzipped, install flashinfer-python 0.6.4 from $W (lab/kernels/_flashinfer_site.sh), then
# lab/kernels/measure_prefill_kernels.py (v1) for both families with the time left. Priced before the call:
# hwmodels/calibration/data/production_attention/prefill_kernels_first_look.csv (lab/kernels/predict_prefill_kernels.py).
# From the repository root of the device copy:   W=.dev/sNN bash .dev/sNN/run_prefill.sh [limit_s]
T0=$(date +%s)
W=${W:-.dev/s18}
LIMIT=${1:-540}
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  nvcc --version | tail -2; nproc
  md5sum lab/kernels/measure_prefill_kernels.py lab/kernels/build_fa3_binary.py lab/kernels/measure_production_attention.py \
    lab/harness.py lab/kernels/_flashinfer_site.sh $W/*.xz; cat $0; } > $OUT/env.txt 2>&1
if [ -f $W/fa3_C.abi3.so.gz ]; then   # a library built by an earlier call of this script
  mkdir -p /tmp/fa3pkg/flash_attn_3 && gunzip -c $W/fa3_C.abi3.so.gz > /tmp/fa3pkg/flash_attn_3/_C.abi3.so
  echo '__version__ = "3.0.0+0251105a.trim"' > /tmp/fa3pkg/flash_attn_3/__init__.py
  mkdir -p /tmp/fa3src && tar -xJf $W/src.tar.xz -C /tmp/fa3src
  cp /tmp/fa3src/src/hopper/flash_attn_interface.py /tmp/fa3pkg/
  python3 - <<'PY'
f = ['BACKWARD','SPLIT','PAGEDKV','APPENDKV','LOCAL','SOFTCAP','PACKGQA','FP16','FP8','VARLEN','CLUSTER','HDIM64','HDIM96','HDIM128','HDIM192','HDIM256','SM8x']
dis = {'BACKWARD','SOFTCAP','LOCAL','FP16','CLUSTER','HDIM64','HDIM96','HDIM192','HDIM256','SM8x','APPENDKV'}
open('/tmp/fa3pkg/flash_attn_config.py', 'w').write('CONFIG = ' + repr({'build_flags': {f'FLASHATTENTION_DISABLE_{k}': k in dis for k in f}}) + '\n')
PY
  echo "fa3 library carried $(el) s"
  PYTHONPATH=/tmp/fa3pkg python3 -c "import flash_attn_interface" 2>&1 | tail -2 || true
  PYTHONPATH=/tmp/fa3pkg python3 -c "import flash_attn_interface" > /dev/null 2>&1 || { echo "carried library does not load: build"; rm -f $W/fa3_C.abi3.so.gz; }
fi
if [ ! -f $W/fa3_C.abi3.so.gz ]; then
  mkdir -p /tmp/fa3src && tar -xJf $W/src.tar.xz -C /tmp/fa3src
  python3 lab/kernels/build_fa3_binary.py /tmp/fa3src/src /tmp/fa3pkg --jobs 16 > $OUT/build.log 2>&1; rc=$?
  grep "compile wall\|FAIL\|link\|built" $OUT/build.log | head; echo "build rc $rc after $(el) s"
  [ $rc -eq 0 ] && gzip -1 -c /tmp/fa3pkg/flash_attn_3/_C.abi3.so > $OUT/fa3_C.abi3.so.gz && ls -la $OUT/fa3_C.abi3.so.gz
fi
. lab/kernels/_flashinfer_site.sh
flashinfer_site $W $OUT/env.txt || exit 3
echo "flashinfer ready $(el) s"
F='warning #\|Remark\|^\s*\^\|^ *if (\|^ *constexpr'
python3 lab/kernels/measure_prefill_kernels.py --out $OUT --parts fa3,fi --pkg /tmp/fa3pkg --grid blind3 \
  --budget-s $(( LIMIT - $(el) - 20 )) 2>&1 | grep -v "^\s*$" | grep -v "$F" | tail -100
echo "all done $(el) s"
