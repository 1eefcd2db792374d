#!/bin/bash
# SGLANG'S FLASHINFER EXTEND WITH A CACHED PREFIX (priced before the call: lab/kernels/predict_sglang_extend.py ->
# hwmodels/calibration/data/production_attention/sglang_extend_predictions.csv). One call on the lent H200: install
# flashinfer-python 0.6.4 from the carried wheels (lab/kernels/_flashinfer_site.sh), JIT-build the modules the sequence
# needs (the sm_90 ragged prefill at 128; the FA2 paged prefill at bf16 and fp8 K/V; merge_state) in parallel processes,
# then measure_sglang_extend.py. From the repository root of the device copy:
#   W=.dev/fisw bash lab/kernels/run_sglang_extend_device.sh
T0=$(date +%s)
W=${W:-.dev/fisw}
el() { echo $(( $(date +%s) - T0 )); }
O=/tmp/sgx_out; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nproc; md5sum lab/kernels/measure_sglang_extend.py lab/kernels/measure_production_attention.py lab/harness.py \
    lab/kernels/_flashinfer_site.sh $W/*; cat $0; } > $O/env.txt 2>&1
. lab/kernels/_flashinfer_site.sh
flashinfer_site $W $O/env.txt || { cp $O/env.txt* $OUT/; exit 3; }
echo "flashinfer ready $(el) s"
cat > /tmp/prebuild.py <<'PY'
import sys, torch
sys.path.insert(0, "lab/kernels")
from measure_production_attention import import_flashinfer
fi, _ = import_flashinfer()
what = sys.argv[1]
ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
qo = torch.tensor([0, 256], dtype=torch.int32, device="cuda")
q = torch.randn(256, 4, 128, device="cuda", dtype=torch.bfloat16)
if what == "ragged":
    w = fi.BatchPrefillWithRaggedKVCacheWrapper(ws, "NHD", backend="auto")
    w.plan(qo, qo, 4, 4, 128, causal=True, q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16)
    o, s = w.run(q, q, q, return_lse=True)
    fi.merge_state(o, s, o, s)
else:
    kdt = torch.bfloat16 if what == "bf16" else torch.float8_e4m3fn
    kc = torch.randn(512, 1, 4, 128, device="cuda").to(kdt)
    w = fi.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD", backend="fa2")
    w.plan(qo, qo, torch.arange(256, dtype=torch.int32, device="cuda"), torch.ones(1, dtype=torch.int32, device="cuda"),
           4, 4, 128, 1, causal=False, q_data_type=torch.bfloat16, kv_data_type=kdt)
    w.run(q, (kc, kc), return_lse=True)
torch.cuda.synchronize()
print(what, "ready", flush=True)
PY
for x in ragged bf16 fp8; do python3 /tmp/prebuild.py $x > $O/build_$x.log 2>&1 & done
wait
tail -n 2 $O/build_*.log; echo "modules built $(el) s"
cd lab/kernels
python3 measure_sglang_extend.py --out $O --budget-s $(( 540 - $(el) )) 2>&1 | grep -v "^\s*$" | tail -90
tar -czf $OUT/sglang_extend.tgz -C $O .
echo "all done $(el) s"
