#!/bin/bash
# Blind grids 23, 24 (H100) and 25 (H200) of the engines' all-reduce kernels on a 4-GPU NVLink host, 4 ranks AND 2
# ranks (vLLM custom all-reduce, TensorRT-LLM all-reduce fusion plain and + residual + RMSNorm; flashinfer-python 0.6.4
# for sm_90a), protocol B (measure_engine_allreduce.py v22: 21 replays of 40 calls a replay up to 16 MiB). The lender serves a 4 x H100 request
# with H100s or H200s, so the script branches on what it got, every branch priced before the call:
#   4 x H100: grid 23 (GRID23_H100_RULES' own blind grid, prices engine_allreduce_grid23.py, 1238290), then grid 24
#             (a second blind grid for the same two H100 models, engine_allreduce_grid24.py) while time is left;
#   4 x H200: grid 25 (the H200 candidate GRID25_H200_RULES, engine_allreduce_grid25.py; grid 24 ran on H200s already,
#             by run_engine_allreduce_blind23_24.sh, of which this is a copy without its RMSNorm step).
# NVLink multicast OFF. A phase cut short drops rows (the shapes interleave the regimes), never a cell.
#
# The two flashinfer modules come PREBUILT (aot.tar.xz); if one does not load it is removed and JIT-built here.
#
# Runs from the repository root of the device copy, with this script (run3.sh), the lab script (script version 22, as
# measure_engine_allreduce.py), the wheels (w.tar.xz) and the prebuilt modules in $W (carry it):  bash .dev/s31ar/run3.sh
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=${W:-.dev/s31ar}
S=lab/kernels/measure_engine_allreduce_s31ar.py
NG=$(nvidia-smi -L | wc -l)
if nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H100; then GRIDS="blind23 blind24"; H200=0
else GRIDS="blind25"; H200=1; fi
L=$OUT/log.txt
echo "GPUs: $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tr -s ' '); grids $GRIDS" | tee $L
[ $NG -lt 4 ] && { echo "fewer than 4 GPUs: nothing run" | tee -a $L; exit 4; }
cp $W/measure_engine_allreduce.py $S
{ date -u; nvidia-smi topo -m
  nvidia-smi --query-gpu=name,driver_version,clocks.current.sm,clocks.max.sm,temperature.gpu --format=csv
  python3 -c "import torch;print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'gpus', torch.cuda.device_count())"
  nvcc --version | tail -2; nproc; md5sum $S lab/kernels/_timing.py lab/harness.py $W/*.xz; cat $0; } > $OUT/env.txt 2>&1
mkdir -p /tmp/whl && tar -xJf $W/w.tar.xz -C /tmp || exit 3
for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /tmp/whl/*.whl > $OUT/pip.txt 2>&1 || { cat $OUT/pip.txt; exit 3; }
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=64
tar -xJf $W/aot.tar.xz -C /tmp/site/flashinfer/data && md5sum /tmp/site/flashinfer/data/aot/*/*.so >> $OUT/env.txt
python3 -c "import flashinfer; print('flashinfer', flashinfer.__version__)" >> $OUT/env.txt 2>&1
python3 $S --out /tmp/smoke --grid blind24 --protocol B --smoke > $OUT/smoke.txt 2>&1; tail -1 $OUT/smoke.txt | tee -a $L
echo "setup $(el) s" | tee -a $L
AOT=1
for i in vllm trtllm; do
  if ! timeout 40 python3 $S --out $OUT --impls $i --build-only >> $OUT/build.txt 2>&1; then
    AOT=0; echo "prebuilt $i did not load: JIT" | tee -a $L
    rm -rf /tmp/site/flashinfer/data/aot/$([ $i = vllm ] && echo vllm_comm || echo trtllm_ar_fusion_only)
  fi
done
tail -2 $OUT/build.txt | tee -a $L
if [ $AOT = 0 ]; then timeout 120 python3 $S --out $OUT --impls vllm,trtllm --build-only >> $OUT/build.txt 2>&1; fi
echo "modules ready (prebuilt: $AOT) $(el) s" | tee -a $L
run() {  # grid impl worlds seconds end
  local left=$(( $5 - $(el) )); local t=$4; [ $t -gt $(( left - 10 )) ] && t=$(( left - 10 ))
  [ $t -lt 15 ] && { echo "skip $1 $2 g$3: $left s left" | tee -a $L; return; }
  timeout $(( t + 8 )) python3 $S --out $OUT --impls $2 --worlds $3 --grid $1 --protocol B --timeout $t 2>&1 | grep -v "^\s*$" >> $L
  echo "$1 $2 g$3 done $(el) s" | tee -a $L
}
END=${END:-200}
for G in $GRIDS; do
  run $G trtllm 4 80 $END; run $G vllm 4 50 $END; run $G trtllm 2 55 $END; run $G vllm 2 40 $END
  END=$(( END + 190 ))
done
echo "all done $(el) s" | tee -a $L
grep "WRONG\|Error\|error\|killed" $L | head -10
python3 - <<'PY'
import csv, glob, os, statistics as st
out = os.environ["OUT"]
cells = {}
for p in sorted(glob.glob(out + "/engine_allreduce_blind2[345]*_*.csv")):
    rs = list(csv.DictReader(open(p)))
    print(os.path.basename(p), len(rs), "rows,", sum("WRONG" in r["note"] for r in rs), "WRONG")
    for r in rs:
        n = int(r["bytes"])
        k = "a<=64K" if n <= 65536 else ("b<=1M" if n <= 1 << 20 else ("c<=8M" if n <= 8 << 20 else "d>8M"))
        cells.setdefault((os.path.basename(p)[17:24] + " " + r["impl"], int(r["world"]), k), []).append((float(r["median_us"]),
                                                                      float(r["p80_us"]) / float(r["p20_us"])))
print("grid    impl                   g bytes    n  med_us  p80/p20")
for (impl, g, k), xs in sorted(cells.items()):
    c = list(zip(*xs))
    print(f"{impl:30s} {g} {k:7s} {len(xs):3d} {st.median(c[0]):7.2f} {st.median(c[1]):8.3f}")
PY
