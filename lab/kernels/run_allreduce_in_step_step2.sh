#!/bin/bash
# The step-2 in-step grid (lab/kernels/measure_allreduce_in_step.py v4; simulator/calibration/allreduce_in_step.py STEP2_*,
# its prediction and rule committed before the run): vLLM's custom all-reduce after row-parallel GEMMs of Qwen2.5-7B
# (3584 / 18944), Qwen2.5-14B (5120 / 13824), Mistral-Large (12288 / 28672), T = 2 / 24 / 96, L = 10 / 40, 4 then 2
# ranks, on the host the lender gives (H100 or H200; the CSV's device column says which). flashinfer-python 0.6.4 from $W as the grid scripts
# install it; NVLink multicast OFF. Runs from the repository root of the device copy:  bash .dev/sNN/run_step2.sh
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=${W:-.dev/s31ar}
L=$OUT/step_log.txt
echo "GPUs: $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tr -s ' ')" | tee $L
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.current.sm,clocks.max.sm,temperature.gpu --format=csv
  md5sum lab/kernels/measure_allreduce_in_step.py lab/kernels/measure_engine_allreduce.py lab/kernels/_timing.py \
    lab/harness.py $W/*.xz; cat $0; } > $OUT/step_env.txt 2>&1
if [ ! -d /tmp/site/flashinfer ]; then
  mkdir -p /tmp/whl && tar -xJf $W/w.tar.xz -C /tmp || exit 3
  for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /tmp/whl/*.whl \
    > $OUT/step_pip.txt 2>&1 || { cat $OUT/step_pip.txt; exit 3; }
  tar -xJf $W/aot.tar.xz -C /tmp/site/flashinfer/data
fi
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=64
echo "setup $(el) s" | tee -a $L
timeout 200 python3 lab/kernels/measure_allreduce_in_step.py --out $OUT --worlds 4,2 --timeout 80 \
  --dims 3584:18944,5120:13824,12288:28672 --tokens 2,24,96 --layers 10,40 --variants step,gemm,ar --tag _step2 2>&1 \
  | grep -v "^\s*$" | tee -a $L | tail -16
echo "all done $(el) s" | tee -a $L
