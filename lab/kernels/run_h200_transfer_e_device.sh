#!/bin/bash
# THE H200 TRANSFER GRID, part E (priced before the call: lab/kernels/predict_h200_transfer.py --part E ->
# hwmodels/calibration/data/production_attention/h200_transfer_e_predictions.csv): the newest H100 blind grids of the
# three families the H200 had never run, re-run on the lent H200 by the same scripts: vLLM's Triton unified attention
# (triton_decode_blind8.py), SGLang's Triton decode kernel (sgl_triton_blind6.py), FlashMLA (mla_blind7, flashmla rows).
# The Triton kernels run from copies kept outside the repository (lab/kernels/ext/, carried: vllm_ua_kernels.py = the
# vllm 0.12.0 wheel's triton_unified_attention.py and sgl_decode_attention.py = the sglang 0.5.6 wheel's
# decode_attention.py, imports replaced; their md5s in env.txt); FlashMLA from the sgl_flash_mla 1.0.0 wheel, unpacked
# and xz-packed (fm.tar.xz: w/<wheel name>/...), carried in two halves over two back-to-back calls (the repository alone
# is 57 MiB of the 64 MiB a call carries): the first call only parks its half in /tmp/fmparts (W=.dev/e1 PARK=1), the
# second carries the other and measures (from 2026-11-28's FlashMLA grid on, in three parts: two parking calls, e1 and
# e2, then the measuring call with e3; the parts are joined in name order). Every part's files are packed into $OUT/h200_transfer_E.tgz after it. From
# the repository root of the device copy:
#   W=.dev/e1 PARK=1 bash lab/kernels/run_h200_transfer_e_device.sh; W=.dev/e2 bash lab/kernels/run_h200_transfer_e_device.sh
# The H200's FlashMLA grid (lab/kernels/predict_mla_h200.py) runs through the same script with the FlashMLA part alone:
#   PARTS=flashmla MLA_GRID=mla_h200 W=.dev/e2 bash lab/kernels/run_h200_transfer_e_device.sh
# and the H200's vLLM Triton grid (lab/kernels/triton_decode_h200.py) with the Triton part alone:
#   PARTS=triton TRITON_SCRIPT=triton_decode_h200.py bash lab/kernels/run_h200_transfer_e_device.sh
if [ -n "$PARK" ]; then mkdir -p /tmp/fmparts && cp $W/fmpart_* /tmp/fmparts/ && ls -la /tmp/fmparts; exit 0; fi
T0=$(date +%s)
W=${W:-.dev/e2}; PARTS=${PARTS:-triton sgl flashmla}; MLA_GRID=${MLA_GRID:-mla_blind7}
TRITON_SCRIPT=${TRITON_SCRIPT:-triton_decode_blind8.py}
el() { echo $(( $(date +%s) - T0 )); }
O=/tmp/oE; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, torch.version.cuda, 'triton', triton.__version__)"; nproc
  md5sum lab/kernels/triton_decode_blind8.py lab/kernels/triton_decode_blind3.py lab/kernels/sgl_triton_blind6.py \
    lab/kernels/sgl_triton_blind4.py lab/kernels/measure_production_attention.py lab/kernels/_timing.py lab/harness.py \
    lab/kernels/ext/* $W/*; cat $0; } > $O/env.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $O/clocks.csv 2>/dev/null &
SMI=$!
pack() { tar -czf $OUT/h200_transfer_E.tgz -C $O . ; echo "packed $1 at $(el) s"; }
cd lab/kernels
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/tcache
if [[ " $PARTS " == *" triton "* ]]; then
  timeout 230 python3 $TRITON_SCRIPT --out $O/triton8 --budget-s ${B8:-190} 2>&1 | grep -v "^\s*$" | tail -4
  echo "triton8 done $(el) s"; pack triton8
fi
if [[ " $PARTS " == *" sgl "* ]]; then
  timeout 110 python3 sgl_triton_blind6.py --out $O/sgl6 --budget-s ${B6:-80} 2>&1 | grep -v "^\s*$" | tail -4
  echo "sgl6 done $(el) s"; pack sgl6
fi
if [[ " $PARTS " == *" flashmla "* ]]; then
cp ../../$W/fmpart_* /tmp/fmparts/ 2>/dev/null; cat /tmp/fmparts/fmpart_* > /tmp/fm.tar.xz; md5sum /tmp/fm.tar.xz >> $O/env.txt
mkdir -p /tmp/whl && tar -xJf /tmp/fm.tar.xz -C /tmp && for d in /tmp/w/*/; do (cd "$d" && python3 -m zipfile -c "/tmp/whl/$(basename "$d").whl" $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /tmp/whl/*.whl > $O/pip.txt 2>&1 || cat $O/pip.txt
PYTHONPATH=/tmp/site timeout $(( 570 - $(el) )) python3 measure_production_attention.py --out $O/fm7 --grid $MLA_GRID \
  --tag _${MLA_GRID#mla_}_flashmla --parts flashmla --budget-s $(( 540 - $(el) )) 2>&1 | grep -v "^\s*$" | tail -4
echo "flashmla ($MLA_GRID) done $(el) s"
fi
kill $SMI 2>/dev/null; pack end
