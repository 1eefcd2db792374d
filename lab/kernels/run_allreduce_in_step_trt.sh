#!/bin/bash
# The TensorRT-LLM in-step grid (lab/kernels/measure_allreduce_in_step.py v4 --impl trtllm; simulator/calibration/
# allreduce_in_step.py TRT_*, its prediction and rule committed before the run): TensorRT-LLM's Lamport one-shot and
# two-shot all-reduce (flashinfer-python 0.6.4's trtllm_allreduce_fusion.cu, plain pattern) after the step-2 grid's
# row-parallel GEMMs (Qwen2.5-7B 3584 / 18944, Qwen2.5-14B 5120 / 13824, Mistral-Large 12288 / 28672), T = 2 / 24 / 96,
# L = 10 / 40, 4 then 2 ranks, on the host the lender gives (the CSV's device column says which; the rule is the
# H200's). flashinfer from $W (lab/kernels/_flashinfer_site.sh); NVLink multicast OFF. From the repository root:
#     W=.dev/sNN bash .dev/sNN/run_trt_step.sh
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
W=${W:-.dev/s17}
. lab/kernels/_flashinfer_site.sh
L=$OUT/trt_log.txt
echo "GPUs: $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tr -s ' ')" | tee $L
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.current.sm,clocks.max.sm,temperature.gpu --format=csv
  md5sum lab/kernels/measure_allreduce_in_step.py lab/kernels/measure_engine_allreduce.py lab/kernels/_timing.py \
    lab/harness.py lab/kernels/_flashinfer_site.sh $W/*.xz; cat $0; } > $OUT/trt_env.txt 2>&1
flashinfer_site $W $OUT/trt_env.txt || exit 3
echo "setup $(el) s" | tee -a $L
timeout 280 python3 lab/kernels/measure_allreduce_in_step.py --out $OUT --worlds 4,2 --timeout 130 --impl trtllm \
  --dims 3584:18944,5120:13824,12288:28672 --tokens 2,24,96 --layers 10,40 --variants step,gemm,ar --tag _trt 2>&1 \
  | grep -v "^\s*$" | tee -a $L | tail -32
echo "all done $(el) s" | tee -a $L
