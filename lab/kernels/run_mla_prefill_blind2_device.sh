#!/bin/bash
# MLA PREFILL BLIND GRID 2 (priced before the call: lab/kernels/predict_mla_prefill.py --grid blind2 ->
# hwmodels/calibration/data/production_attention/mla_prefill_blind2_predictions.csv). One call on the lent H200 with the
# FA3 library grid 1's call built (build_fa3_binary.py --mla; fa3_mla_C.abi3.so.gz, its flash_attn_interface.py), then
# measure_mla_prefill.py --grid blind2. From the repository root of the device copy:
#   W=.dev/mla2 bash lab/kernels/run_mla_prefill_blind2_device.sh
W=${W:-.dev/mla2}
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  md5sum lab/kernels/measure_mla_prefill.py lab/kernels/measure_production_attention.py lab/harness.py $W/*; cat $0; } > $OUT/env.txt 2>&1
P=/tmp/fa3pkg; mkdir -p $P/flash_attn_3
gunzip -c $W/fa3_mla_C.abi3.so.gz > $P/flash_attn_3/_C.abi3.so
echo '__version__ = "3.0.0+0251105a.trim"' > $P/flash_attn_3/__init__.py
cp $W/flash_attn_interface.py $P/
python3 - <<'PY'
f = ['BACKWARD','SPLIT','PAGEDKV','APPENDKV','LOCAL','SOFTCAP','PACKGQA','FP16','FP8','VARLEN','CLUSTER','HDIM64','HDIM96','HDIM128','HDIM192','HDIM256','SM8x']
dis = {'BACKWARD','SOFTCAP','LOCAL','FP16','CLUSTER','HDIM64','HDIM96','HDIM256','SM8x','APPENDKV'}
c = {f'FLASHATTENTION_DISABLE_{k}': k in dis for k in f}
c.update({'FLASH_ATTENTION_DISABLE_HDIMDIFF64': True, 'FLASH_ATTENTION_DISABLE_HDIMDIFF192': False})
open('/tmp/fa3pkg/flash_attn_config.py', 'w').write('CONFIG = ' + repr({'build_flags': c}) + '\n')
PY
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $OUT/clocks.csv 2>/dev/null &
SMI=$!
PYTHONUNBUFFERED=1 python3 lab/kernels/measure_mla_prefill.py --out /tmp/mla_out2 --pkg $P --grid blind2 --budget-s 200 2>&1 | tail -55
kill $SMI 2>/dev/null
cp /tmp/mla_out2/mla_prefill_blind2.csv /tmp/mla_out2/mla_prefill_blind2_grids.csv /tmp/mla_out2/log.txt $OUT/ 2>/dev/null
