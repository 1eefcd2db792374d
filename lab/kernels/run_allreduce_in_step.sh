#!/bin/bash
# vLLM's custom all-reduce inside a decode step vs back to back (lab/kernels/measure_allreduce_in_step.py v4) on a 4-GPU
# NVLink host, 4 ranks then 2; when the host is 4 x H100 it first runs the all-reduce grids 23 and 24 (run3.sh, the copy
# of run_engine_allreduce_blind23_25.sh beside this script), which wait for H100s. flashinfer-python 0.6.4 from the
# wheels (w.tar.xz) and the prebuilt comm modules (aot.tar.xz) in $W, as the grid scripts install them. NVLink multicast
# OFF. Runs from the repository root of the device copy:  bash .dev/s31ar/run4.sh
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=${W:-.dev/s31ar}
if nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H100; then
  bash $W/run3.sh; echo "grids done $(el) s"; mkdir -p $OUT/step; OUT=$OUT/step
fi
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
timeout 200 python3 lab/kernels/measure_allreduce_in_step.py --out $OUT --worlds 4,2 --timeout 90 2>&1 \
  | grep -v "^\s*$" | tee -a $L | tail -12
echo "all done $(el) s" | tee -a $L
