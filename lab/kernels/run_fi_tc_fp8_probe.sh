#!/bin/bash
# The fi_tc fp8 short-call probe (lab/kernels/probe_fi_tc_fp8.py, LOOKED-AT) on the lent H100: flashinfer-python 0.6.4
# from $W (lab/kernels/_flashinfer_site.sh). From the repository root of the device copy:  W=.dev/sNN bash .dev/sNN/run_probe.sh
T0=$(date +%s)
W=${W:-.dev/s17}
. lab/kernels/_flashinfer_site.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  md5sum lab/kernels/probe_fi_tc_fp8.py lab/kernels/measure_production_attention.py lab/harness.py $W/*.xz; cat $0; } \
  > $OUT/probe_env.txt 2>&1
flashinfer_site $W $OUT/probe_env.txt || exit 3
echo "setup $(( $(date +%s) - T0 )) s"
F='warning #\|Remark\|^\s*\^\|^ *if (\|^ *constexpr'
python3 lab/kernels/probe_fi_tc_fp8.py --out $OUT --budget-s ${BUDGET:-240} 2>&1 | grep -v "^\s*$" | grep -v "$F" \
  | tee $OUT/probe_log.txt | tail -50
echo "all done $(( $(date +%s) - T0 )) s"
