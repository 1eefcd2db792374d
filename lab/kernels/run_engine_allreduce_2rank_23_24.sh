#!/bin/bash
# Blind grids 23 and 24 of the engines' all-reduce kernels at 2 ranks only, on a 2 x H100 NVLink host (a copy of
# run_engine_allreduce_blind23_24.sh for the 2-GPU kind, when 4 x H100 requests keep getting H200s): vLLM's custom
# all-reduce and TensorRT-LLM's fusion plain and + residual + RMSNorm (flashinfer-python 0.6.4 for sm_90a), protocol B
# (measure_engine_allreduce.py v21). Grid 23's 2-rank rows judge GRID23_H100_RULES' only 2-rank key (oneshot2_link) by the
# rule committed before the call (engine_allreduce_grid23.py, TWO_RANK_SHIP_RULE); grid 24's 2-rank rows follow as a second
# blind check. Both priced before the call (1238290, 32a912d). On H200s nothing runs (exit 0). NVLink multicast OFF.
#
# flashinfer from lab/kernels/_flashinfer_site.sh. Runs from the repository root of the device copy, with this script
# (run2.sh), the lab script, the wheels and the
# prebuilt modules in $W (carry it):  bash .dev/s31ar/run2.sh
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
W=${W:-.dev/s31ar}
S=lab/kernels/measure_engine_allreduce_s31ar.py
NG=$(nvidia-smi -L | wc -l)
if ! nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H100; then
  echo "not H100s: nothing run"; nvidia-smi --query-gpu=name --format=csv,noheader | head -1; exit 0
fi
GRIDS="blind23 blind24"; H200=0
L=$OUT/log.txt
echo "GPUs: $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tr -s ' '); grids $GRIDS" | tee $L
[ $NG -lt 2 ] && { echo "fewer than 2 GPUs: nothing run" | tee -a $L; exit 4; }
cp $W/measure_engine_allreduce.py $S
{ date -u; nvidia-smi topo -m
  nvidia-smi --query-gpu=name,driver_version,clocks.current.sm,clocks.max.sm,temperature.gpu --format=csv
  python3 -c "import torch;print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'gpus', torch.cuda.device_count())"
  nvcc --version | tail -2; nproc; md5sum $S lab/kernels/_timing.py lab/harness.py $W/*.xz; cat $0; } > $OUT/env.txt 2>&1
. lab/kernels/_flashinfer_site.sh
flashinfer_site $W $OUT/env.txt || exit 3
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
END=${END:-150}
for G in $GRIDS; do
  run $G trtllm 2 70 $END; run $G vllm 2 50 $END
  END=$(( END + 110 ))
done
echo "all done $(el) s" | tee -a $L
grep "WRONG\|Error\|error\|killed" $L | head -10
python3 - <<'PY'
import csv, glob, os, statistics as st
out = os.environ["OUT"]
cells = {}
for p in sorted(glob.glob(out + "/engine_allreduce_blind2[34]*_*.csv")):
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
