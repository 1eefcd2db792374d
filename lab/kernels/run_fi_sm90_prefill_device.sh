#!/bin/bash
# THE FLASHINFER SM_90 PREFILL FIRST LOOK (priced before the call: lab/kernels/predict_fi_sm90_prefill.py ->
# hwmodels/calibration/data/production_attention/fi_sm90_prefill_first_look.csv). One call on the lent H200: install
# flashinfer-python 0.6.4 from the carried wheels (lab/kernels/_flashinfer_site.sh), JIT-build its sm_90 batch prefill
# modules (backend "fa3", bf16, head dims 128 / 128 and 192 / 128) in two processes at once, return the built modules
# (tar.xz, for a later call to carry), then measure_fi_sm90_prefill.py with the time left. From the repository root of
# the device copy:   W=.dev/fisw bash lab/kernels/run_fi_sm90_prefill_device.sh [first|blind2]
T0=$(date +%s)
W=${W:-.dev/fisw}
GRID=${1:-first}
el() { echo $(( $(date +%s) - T0 )); }
O=/tmp/fisw_out; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nvcc --version | tail -2; nproc
  md5sum lab/kernels/measure_fi_sm90_prefill.py lab/kernels/measure_production_attention.py lab/harness.py \
    lab/kernels/_flashinfer_site.sh $W/*; cat $0; } > $O/env.txt 2>&1
. lab/kernels/_flashinfer_site.sh
flashinfer_site $W $O/env.txt || { cp $O/env.txt* $OUT/; exit 3; }
echo "flashinfer ready $(el) s"
if [ -f $W/jit.tar.xz ]; then mkdir -p $HOME/.cache && tar -xJf $W/jit.tar.xz -C $HOME/.cache; echo "carried modules"; fi
cat > /tmp/prebuild.py <<'PY'
import sys, time, torch
sys.path.insert(0, "lab/kernels")
from measure_production_attention import import_flashinfer
fi, _ = import_flashinfer()
d, dv = int(sys.argv[1]), int(sys.argv[2])
t = time.time()
ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
qo = torch.tensor([0, 256], dtype=torch.int32, device="cuda")
w = fi.BatchPrefillWithRaggedKVCacheWrapper(ws, "NHD", backend="fa3")
w.plan(qo, qo, 4, 4, d, head_dim_vo=dv, causal=True, q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16)
q = torch.randn(256, 4, d, device="cuda", dtype=torch.bfloat16)
k = torch.randn(256, 4, d, device="cuda", dtype=torch.bfloat16)
v = torch.randn(256, 4, dv, device="cuda", dtype=torch.bfloat16)
w.run(q, k, v); torch.cuda.synchronize()
print(f"module {d}/{dv} ready in {time.time() - t:.0f} s", flush=True)
PY
python3 /tmp/prebuild.py 128 128 > $O/build128.log 2>&1 &
P1=$!
python3 /tmp/prebuild.py 192 128 > $O/build192.log 2>&1 &
P2=$!
wait $P1; wait $P2
tail -2 $O/build128.log $O/build192.log; echo "modules built $(el) s"
( cd $HOME/.cache && find . -name "*.so" -path "*sm90*" | tar -cJf $OUT/fi_sm90_jit.tar.xz -T - ) 2>/dev/null
ls -la $OUT/fi_sm90_jit.tar.xz
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $O/clocks.csv 2>/dev/null &
SMI=$!
F='warning #\|Remark\|^\s*\^\|^ *if (\|^ *constexpr'
cd lab/kernels
python3 measure_fi_sm90_prefill.py --out $O --grid $GRID --budget-s $(( 560 - $(el) )) 2>&1 | grep -v "^\s*$" | grep -v "$F" | tail -80
kill $SMI 2>/dev/null
tar -czf $OUT/fi_sm90_$GRID.tgz -C $O .
echo "all done $(el) s"
