#!/bin/bash
# Blind grid 22 of the engines' all-reduce kernels on a 4 x H100 NVLink host, 4 ranks AND 2 ranks (vLLM custom
# all-reduce, TensorRT-LLM all-reduce fusion plain and + residual + RMSNorm; flashinfer-python 0.6.4 for sm_90a), 29 shapes
# in no earlier grid at both rank counts (measure_engine_allreduce.py v19 --grid blind22 --protocol AB), every row timed by
# TWO protocols in the same process back to back: A = the earlier grids' (7 replays; 40 calls a replay <= 1 MiB, 10 above)
# and B = 21 replays of 40 calls; each to its own CSV. Priced beforehand by the H100 as shipped (f0d9bbc,
# GRID20_H100_RULES; simulator/calibration/engine_allreduce_grid22.py: hwmodels/calibration/data/production_kernels/
# engine_allreduce_blind22_prediction_H100-SXM_2026-11-28.csv). A copy of run_engine_allreduce_blind19.sh (4-GPU phases)
# with the v19 lab script and --protocol AB; ON_H200=skip by default (only an H100 host is wanted: on H200s it exits at
# once). NVLink multicast OFF. Whole run bounded to ~265 s (call bound 300 s): a phase cut short drops rows (the shapes
# interleave the regimes), never a protocol.
#
# The two flashinfer modules come PREBUILT (aot.tar.xz); if one does not load it is removed and JIT-built here.
#
# Runs from the repository root of the device copy, with this script (run.sh), the lab script (script version 19, as
# measure_engine_allreduce.py), the wheels (w.tar.xz) and the prebuilt modules in $W (carry it):  bash .dev/s29ar/run.sh
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
W=${W:-.dev/s29ar}
S=lab/kernels/measure_engine_allreduce_s29ar.py
G=blind22
NG=$(nvidia-smi -L | wc -l)
if [ "${ON_H200:-skip}" = skip ] && ! nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H100; then
  echo "H200s lent, ON_H200=skip: nothing run"; nvidia-smi --query-gpu=name --format=csv,noheader | head -1; exit 0
fi
L=$OUT/log.txt
echo "GPUs: $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tr -s ' '); grid $G" | tee $L
[ $NG -lt 4 ] && { echo "fewer than 4 GPUs: nothing run" | tee -a $L; exit 4; }
cp $W/measure_engine_allreduce.py $S
{ date -u; nvidia-smi topo -m
  nvidia-smi --query-gpu=name,driver_version,clocks.current.sm,clocks.max.sm,temperature.gpu --format=csv
  python3 -c "import torch;print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'gpus', torch.cuda.device_count())"
  nvcc --version | tail -2; nproc; md5sum $S lab/kernels/_timing.py lab/harness.py $W/*.xz; cat $W/run.sh; } > $OUT/env.txt 2>&1
mkdir -p /tmp/whl && tar -xJf $W/w.tar.xz -C /tmp || exit 3
for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /tmp/whl/*.whl > $OUT/pip.txt 2>&1 || { cat $OUT/pip.txt; exit 3; }
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=64
tar -xJf $W/aot.tar.xz -C /tmp/site/flashinfer/data && md5sum /tmp/site/flashinfer/data/aot/*/*.so >> $OUT/env.txt
python3 -c "import flashinfer; print('flashinfer', flashinfer.__version__)" >> $OUT/env.txt 2>&1
python3 $S --out /tmp/smoke --grid $G --protocol AB --smoke > $OUT/smoke.txt 2>&1; tail -1 $OUT/smoke.txt | tee -a $L
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
run() {  # impl worlds seconds end
  local left=$(( $4 - $(el) )); local t=$3; [ $t -gt $(( left - 10 )) ] && t=$(( left - 10 ))
  [ $t -lt 15 ] && { echo "skip $1 g$2: $left s left" | tee -a $L; return; }
  timeout $(( t + 8 )) python3 $S --out $OUT --impls $1 --worlds $2 --grid $G --protocol AB --timeout $t 2>&1 | grep -v "^\s*$" >> $L
  echo "$G $1 g$2 done $(el) s" | tee -a $L
}
END=262
run trtllm 4 80 $END; run vllm 4 50 $END; run trtllm 2 55 $END; run vllm 2 40 $END
echo "all done $(el) s" | tee -a $L
grep "WRONG\|Error\|error\|killed" $L | head -10
python3 - <<'PY'
import csv, glob, os, statistics as st
out = os.environ["OUT"]
rows = {}
for p in sorted(glob.glob(out + "/engine_allreduce_blind22*_*.csv")):
    rs = list(csv.DictReader(open(p)))
    print(os.path.basename(p), len(rs), "rows,", sum("WRONG" in r["note"] for r in rs), "WRONG")
    proto = os.path.basename(p).split("_")[2][-1]
    for r in rs:
        rows[(proto, r["impl"], int(r["world"]), int(r["tokens"]), int(r["hidden"]))] = r
def b(n):
    return "a<=64K" if n <= 65536 else ("b<=1M" if n <= 1 << 20 else "c>1M")
cells = {}
for (p, impl, g, t, h), r in rows.items():
    if p != "A" or ("B", impl, g, t, h) not in rows:
        continue
    q = rows[("B", impl, g, t, h)]
    a, bb = float(r["median_us"]), float(q["median_us"])
    cells.setdefault((impl, g, b(int(r["bytes"]))), []).append((a, bb, a - bb, float(r["p80_us"]) / float(r["p20_us"]),
                                                              float(q["p80_us"]) / float(q["p20_us"])))
print("impl                   g bytes    n   A_us   B_us  A-B_us  A_p80/p20  B_p80/p20")
for (impl, g, k), xs in sorted(cells.items()):
    c = list(zip(*xs))
    print(f"{impl:22s} {g} {k:7s} {len(xs):3d} {st.median(c[0]):6.2f} {st.median(c[1]):6.2f} {st.median(c[2]):7.2f} "
          f"{st.median(c[3]):9.3f} {st.median(c[4]):9.3f}")
PY
