#!/bin/bash
# Copied with build_fa3_binary.py, measure_fa3_binary.py, lab/harness.py, lab/kernels/measure_production_attention.py
# and the trimmed source (src/hopper: flash-attention hopper/ @ 0251105a, 10 hdim-128 sm90 instantiations; src/cutlass:
# NVIDIA/cutlass @ 71275920 include/ + tools/util/include/) into one folder, run as `bash run.sh [limit_s]`.
# One device call: build FA3's hopper/ forward (trimmed, build_fa3_binary.py), return the library, check it, then measure the
# grid of measure_fa3_binary.py (priced before this call: fa3_binary_first_look.csv) with the time left.
export PYTHONUNBUFFERED=1
LIMIT=${1:-560}
T0=$(date +%s)
D=$(cd "$(dirname "$0")" && pwd)
nvidia-smi > $OUT/nvidia-smi.txt 2>&1
nvcc --version | tail -1; nproc; python3 -c "import torch; print(torch.__version__, torch.version.cuda)"
python3 $D/build_fa3_binary.py $D/src /tmp/fa3pkg --jobs 16 > $OUT/build.log 2>&1; rc=$?
grep -v "^ptxas info\|^ptxas\s*info\|bytes stack frame\|Used [0-9]* registers\|Compiling entry\|Function properties" $OUT/build.log | tail -60
echo "build rc $rc after $(( $(date +%s) - T0 )) s"
[ $rc -ne 0 ] && exit 2
ls -la /tmp/fa3pkg/flash_attn_3/
gzip -1 -c /tmp/fa3pkg/flash_attn_3/_C.abi3.so > $OUT/fa3_C.abi3.so.gz; ls -la $OUT/fa3_C.abi3.so.gz
cd $D
timeout 120 python3 measure_fa3_binary.py --pkg /tmp/fa3pkg --out /tmp/smoke --smoke --budget-s 60 > /tmp/smoke.txt 2>&1
grep -i "failed\|rows\|error\|Traceback" /tmp/smoke.txt | head -20; grep -o "rel_err=[0-9.e+-]*" /tmp/smoke/fa3_binary.csv
BUD=$(( LIMIT - ($(date +%s) - T0) - 15 ))
echo "measure budget $BUD s"
if [ $BUD -gt 40 ]; then
  python3 measure_fa3_binary.py --pkg /tmp/fa3pkg --out $OUT --budget-s $BUD > $OUT/stdout.txt 2>&1
  tail -15 $OUT/stdout.txt
fi
echo "total $(( $(date +%s) - T0 )) s"
