#!/bin/bash
# Blind grid 8 of the engines' all-reduce kernels on a 4-GPU NVLink host (vLLM custom all-reduce, TensorRT-LLM
# all-reduce fusion plain and + residual + RMSNorm; flashinfer-python 0.6.4 JIT for sm_90a), shapes in no earlier grid
# (measure_engine_allreduce.py --grid blind8: 4 ranks, hidden 3584 / 4096 / 5120 / 8192 at new token counts, 9..900; 2-rank controls), 2-rank rows
# on GPUs 0-1 and 4-rank rows on GPUs 0-3, priced beforehand by two models (hwmodels/calibration/data/
# production_kernels/engine_allreduce_blind8_prediction_H100-SXM_2026-11-27.csv.gz, commit d5ee6a3). NVLink multicast OFF. Whole run
# bounded to ~225 s (4-rank rows first).
#
# Runs from the repository root of the device copy, with this script, the lab script (script version 5) and the
# wheels in $W (carry it):  bash .dev/s17ar/run.sh
# The lab script is copied beside lab/kernels/_timing.py (which it imports, with lab/harness.py).
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=${W:-.dev/s17ar}
S=lab/kernels/measure_engine_allreduce_s17.py
cp $W/measure_engine_allreduce.py $S
L=$OUT/log.txt
{ date -u; nvidia-smi topo -m
  nvidia-smi --query-gpu=name,driver_version,clocks.current.sm,clocks.max.sm,temperature.gpu --format=csv
  python3 -c "import torch;print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'gpus', torch.cuda.device_count())"
  nvcc --version | tail -2; nproc; md5sum $S lab/kernels/_timing.py lab/harness.py; cat $W/run.sh; } > $OUT/env.txt 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $W/whl/*.whl > $OUT/pip.txt 2>&1 || { cat $OUT/pip.txt; exit 3; }
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=32
python3 -c "import flashinfer; print('flashinfer', flashinfer.__version__)" >> $OUT/env.txt 2>&1
python3 $S --out /tmp/smoke --grid blind8 --smoke > $OUT/smoke.txt 2>&1; tail -1 $OUT/smoke.txt | tee -a $L
echo "setup $(el) s" | tee -a $L
# the TensorRT-LLM fusion module's JIT build (~120-140 s on a fresh machine; seconds from a warm JIT cache) runs while
# vLLM's kernel is measured at 2 and 4 ranks
( timeout 185 python3 $S --out $OUT --impls trtllm --build-only > $OUT/build_trtllm.txt 2>&1 ) &
BP=$!
timeout 100 python3 $S --out $OUT --impls vllm --worlds 4,2 --grid blind8 --timeout 40 2>&1 | grep -v "^\s*$" >> $L
echo "vllm done $(el) s" | tee -a $L
wait $BP; echo "trtllm build rc $? at $(el) s" | tee -a $L; tail -2 $OUT/build_trtllm.txt | tee -a $L
LEFT=$(( 225 - $(el) )); [ $LEFT -lt 20 ] && LEFT=20
timeout $LEFT python3 $S --out $OUT --impls trtllm --worlds 4,2 --grid blind8 --timeout $(( (LEFT - 8) / 2 )) 2>&1 \
  | grep -v "^\s*$" >> $L
echo "all done $(el) s" | tee -a $L
grep "WRONG\|Error\|error\|killed" $L | head -10
python3 - <<'PY'
import csv, glob, os, statistics
out = os.environ["OUT"]
for p in sorted(glob.glob(out + "/engine_allreduce_blind8_*.csv")):
    rows = list(csv.DictReader(open(p)))
    print(os.path.basename(p), len(rows), "rows,", sum("WRONG" in r["note"] for r in rows), "WRONG")
    by = {}
    for r in rows:
        by.setdefault((r["impl"], r["world"]), []).append(float(r["median_us"]))
    for (impl, g), xs in sorted(by.items()):
        print(f"  {impl:22s} g{g} n {len(xs):3d}  median {statistics.median(xs):8.2f} us  min {min(xs):7.2f}  max {max(xs):8.2f}")
PY
