#!/bin/bash
# Cold grid 3 (fi_tc and fi_verify, bf16 and fp8) on the lent H100: lab/kernels/measure_attention_cold.py --grid 3 (script
# cold3), priced before the call by main and by the candidate on branch cand-lone-tile (attention_cold3_predictions.csv;
# simulator/calibration/fi_tc_fp8_grid3.py holds the rule). flashinfer-python 0.6.4 from $W
# (lab/kernels/_flashinfer_site.sh). From the repository root of the device copy:   W=.dev/sNN bash .dev/sNN/run_cold3.sh
T0=$(date +%s)
W=${W:-.dev/s17}
. lab/kernels/_flashinfer_site.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  nvcc --version | tail -2
  md5sum lab/kernels/measure_attention_cold.py lab/kernels/measure_production_attention.py \
    lab/kernels/measure_xqa_attention.py lab/harness.py lab/kernels/_flashinfer_site.sh $W/*.xz; cat $0; } > $OUT/env.txt 2>&1
flashinfer_site $W $OUT/env.txt || exit 3
echo "setup $(( $(date +%s) - T0 )) s"
F='warning #\|Remark\|^\s*\^\|^ *if (\|^ *constexpr'
python3 lab/kernels/measure_attention_cold.py --out $OUT --grid 3 --budget-s ${BUDGET:-300} 2>&1 | grep -v "^\s*$" \
  | grep -v "$F" | tail -8
python3 - <<'PY'
import csv, os
rows = list(csv.DictReader(open(os.environ["OUT"] + "/attention_cold.csv")))
by = {}
for r in rows:
    k = (r["family"], r["model"], r["dtype"], r["batch"], r["q_rows"], r["context"], r["role"])
    by.setdefault(k, {})[r["mode"]] = r["median_us"]
for k, v in by.items():
    w, c = v.get("warm", ""), v.get("cold", "")
    ratio = f"{float(c) / float(w):.2f}" if w and c else "-"
    print(*k, w, c, ratio)
PY
echo "all done $(( $(date +%s) - T0 )) s"
