#!/bin/bash
# The step-2 in-step grid (lab/kernels/measure_allreduce_in_step.py v4; simulator/calibration/allreduce_in_step.py STEP2_*,
# its prediction and rule committed before the run): vLLM's custom all-reduce after row-parallel GEMMs of Qwen2.5-7B
# (3584 / 18944), Qwen2.5-14B (5120 / 13824), Mistral-Large (12288 / 28672), T = 2 / 24 / 96, L = 10 / 40, 4 then 2
# ranks, on the host the lender gives (H100 or H200; the CSV's device column says which). flashinfer-python 0.6.4 from
# $W (lab/kernels/_flashinfer_site.sh); NVLink multicast OFF. From the repository root of the device copy:
#     bash .dev/sNN/run_step2.sh
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
W=${W:-.dev/s31ar}
. lab/kernels/_flashinfer_site.sh
L=$OUT/step_log.txt
echo "GPUs: $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tr -s ' ')" | tee $L
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.current.sm,clocks.max.sm,temperature.gpu --format=csv
  md5sum lab/kernels/measure_allreduce_in_step.py lab/kernels/measure_engine_allreduce.py lab/kernels/_timing.py \
    lab/harness.py lab/kernels/_flashinfer_site.sh $W/*.xz; cat $0; } > $OUT/step_env.txt 2>&1
flashinfer_site $W $OUT/step_env.txt || exit 3
echo "setup $(el) s" | tee -a $L
timeout 200 python3 lab/kernels/measure_allreduce_in_step.py --out $OUT --worlds 4,2 --timeout 80 \
  --dims 3584:18944,5120:13824,12288:28672 --tokens 2,24,96 --layers 10,40 --variants step,gemm,ar --tag _step2 2>&1 \
  | grep -v "^\s*$" | tee -a $L | tail -16
echo "all done $(el) s" | tee -a $L
