#!/bin/bash
# PREFILL BLIND GRID 5 (FA3 only; priced before the call: lab/kernels/predict_prefill_kernels.py --grid blind5 ->
# hwmodels/calibration/data/production_attention/prefill_kernels_blind5_predictions.csv), on the lent H200: FA3's library
# built by session 18's first prefill call (fa3_C.abi3.so.gz, flash-attention hopper/ @ 0251105a, hdim 128) with its
# flash_attn_interface.py, then measure_prefill_kernels.py (v5) --grid blind5 --parts fa3.
# From the repository root of the device copy:   L=.dev/h200fa3 bash lab/kernels/run_prefill_kernels_blind5_device.sh
L=${L:-.dev/h200fa3}
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  md5sum lab/kernels/measure_prefill_kernels.py lab/kernels/measure_production_attention.py lab/harness.py $L/*; cat $0; } > $OUT/env.txt 2>&1
P=/tmp/fa3pkg; mkdir -p $P/flash_attn_3
gunzip -c $L/fa3_C.abi3.so.gz > $P/flash_attn_3/_C.abi3.so
echo '__version__ = "3.0.0+0251105a.trim"' > $P/flash_attn_3/__init__.py
cp $L/flash_attn_interface.py $P/
python3 - <<'PY'
f = ['BACKWARD','SPLIT','PAGEDKV','APPENDKV','LOCAL','SOFTCAP','PACKGQA','FP16','FP8','VARLEN','CLUSTER','HDIM64','HDIM96','HDIM128','HDIM192','HDIM256','SM8x']
dis = {'BACKWARD','SOFTCAP','LOCAL','FP16','CLUSTER','HDIM64','HDIM96','HDIM192','HDIM256','SM8x','APPENDKV'}
open('/tmp/fa3pkg/flash_attn_config.py', 'w').write('CONFIG = ' + repr({'build_flags': {f'FLASHATTENTION_DISABLE_{k}': k in dis for k in f}}) + '\n')
PY
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $OUT/clocks.csv 2>/dev/null &
SMI=$!
cd lab/kernels && PYTHONUNBUFFERED=1 python3 measure_prefill_kernels.py --out /tmp/pf5 --parts fa3 --pkg $P --grid blind5 \
  --budget-s 200 2>&1 | tail -20
kill $SMI 2>/dev/null
cp /tmp/pf5/prefill_kernels_blind5.csv /tmp/pf5/prefill_kernels_blind5_grids.csv /tmp/pf5/log.txt $OUT/ 2>/dev/null
