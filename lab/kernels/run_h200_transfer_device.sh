#!/bin/bash
# THE H200 TRANSFER GRID (priced before the call: lab/kernels/predict_h200_transfer.py ->
# hwmodels/calibration/data/production_attention/h200_transfer_predictions.csv). The newest H100 blind grid of each
# production attention family, the same shapes re-run on the lent H200 by the same measurement scripts and flags:
#   part A: fa3_decode (measure_fa3_binary.py --grid blind3), prefill3 (measure_prefill_kernels.py --grid blind3, FA3 and
#           FlashInfer), prefill4 (--grid blind4, FlashInfer)
#   part B: fi_dec8 (measure_production_attention.py --grid fi_dec_blind8), fi_tc14 (--grid fi_tc_blind14)
# FA3's library is the one session 18's first prefill call built (build_fa3_binary.py: flash-attention hopper/ @ 0251105a,
# CUTLASS @ 71275920; fa3_C.abi3.so.gz) with its flash_attn_interface.py; FlashInfer 0.6.4 from the carried wheels
# (lab/kernels/_flashinfer_site.sh). Every part's files are packed into $OUT/h200_transfer_<part>.tgz after it (the
# call returns at most 8 files). From the repository root of the device copy:
#   W=.dev/h200 [L=.dev/h200fa3] bash lab/kernels/run_h200_transfer_device.sh A|B
# ($W: w.tar.xz, aot.tar.xz; $L: fa3_C.abi3.so.gz, flash_attn_interface.py, default $W. Two folders because one call's
# working tree may not carry both: part B's call carries $W and installs FlashInfer into /tmp/site, part A's call, on the
# machine still warm, carries $L and finds the install there.)
T0=$(date +%s)
W=${W:-.dev/h200}
L=${L:-$W}
PART=${1:-A}
el() { echo $(( $(date +%s) - T0 )); }
O=/tmp/o$PART; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nvcc --version | tail -2; nproc
  md5sum lab/kernels/measure_prefill_kernels.py lab/kernels/measure_fa3_binary.py lab/kernels/measure_production_attention.py \
    lab/harness.py lab/kernels/_flashinfer_site.sh $W/* $L/*; cat $0; } > $O/env.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $O/clocks.csv 2>/dev/null &
SMI=$!
pack() { kill $SMI 2>/dev/null; tar -czf $OUT/h200_transfer_$PART.tgz -C $O . ; echo "packed $1 at $(el) s"; }
. lab/kernels/_flashinfer_site.sh
flashinfer_site $W $O/env.txt || { pack install; exit 3; }
echo "flashinfer ready $(el) s"
F='warning #\|Remark\|^\s*\^\|^ *if (\|^ *constexpr'
cd lab/kernels
if [ "$PART" = A ]; then
  mkdir -p /tmp/fa3pkg/flash_attn_3 && gunzip -c ../../$L/fa3_C.abi3.so.gz > /tmp/fa3pkg/flash_attn_3/_C.abi3.so
  echo '__version__ = "3.0.0+0251105a.trim"' > /tmp/fa3pkg/flash_attn_3/__init__.py
  cp ../../$L/flash_attn_interface.py /tmp/fa3pkg/
  python3 - <<'PY'
f = ['BACKWARD','SPLIT','PAGEDKV','APPENDKV','LOCAL','SOFTCAP','PACKGQA','FP16','FP8','VARLEN','CLUSTER','HDIM64','HDIM96','HDIM128','HDIM192','HDIM256','SM8x']
dis = {'BACKWARD','SOFTCAP','LOCAL','FP16','CLUSTER','HDIM64','HDIM96','HDIM192','HDIM256','SM8x','APPENDKV'}
open('/tmp/fa3pkg/flash_attn_config.py', 'w').write('CONFIG = ' + repr({'build_flags': {f'FLASHATTENTION_DISABLE_{k}': k in dis for k in f}}) + '\n')
PY
  python3 measure_fa3_binary.py --pkg /tmp/fa3pkg --out $O/fa3_decode --grid blind3 --budget-s 170 2>&1 | tail -3
  echo "fa3_decode done $(el) s"; pack fa3_decode
  python3 measure_prefill_kernels.py --out $O/prefill3 --parts fa3,fi --pkg /tmp/fa3pkg --grid blind3 --budget-s 150 \
    2>&1 | grep -v "^\s*$" | grep -v "$F" | tail -3
  echo "prefill3 done $(el) s"; pack prefill3
  python3 measure_prefill_kernels.py --out $O/prefill4 --parts fi --grid blind4 --budget-s $(( 540 - $(el) )) \
    2>&1 | grep -v "^\s*$" | grep -v "$F" | tail -3
  echo "prefill4 done $(el) s"; pack prefill4
else
  SHAPE_TIMES=$O/fi_dec8_shape_times.csv python3 measure_production_attention.py --out $O/fi_dec8 --grid fi_dec_blind8 \
    --parts build,fi_decode --budget-s 200 2>&1 | grep -v "^\s*$" | grep -v "$F" | tail -4
  echo "fi_dec8 done $(el) s"; pack fi_dec8
  python3 measure_production_attention.py --out $O/fi_tc14 --tag _blind14 --grid fi_tc_blind14 --parts build,fi_verify \
    --budget-s $(( 540 - $(el) )) 2>&1 | grep -v "^\s*$" | grep -v "$F" | tail -4
  echo "fi_tc14 done $(el) s"; pack fi_tc14
fi
