#!/bin/bash
# THE MLA PREFILL FIRST LOOK (priced before the call: lab/kernels/predict_mla_prefill.py ->
# hwmodels/calibration/data/production_attention/mla_prefill_first_look.csv). One call on the lent H200: build the trimmed
# FA3 with its bf16 hdim 192 x 128 forward (build_fa3_binary.py --mla from $W/src.tar.xz: prepare_fa3_source.sh's tree @
# flash-attention 0251105a / CUTLASS 71275920 plus hopper/instantiations/flash_fwd_hdim192_128_bf16{,_packgqa,_split,
# _paged,_paged_split}_sm90.cu from the same commit), return the library gzipped, then measure_mla_prefill.py with the
# time left. From the repository root of the device copy:   W=.dev/mla bash lab/kernels/run_mla_prefill_device.sh
T0=$(date +%s)
W=${W:-.dev/mla}
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nvcc --version | tail -2; nproc
  md5sum lab/kernels/measure_mla_prefill.py lab/kernels/build_fa3_binary.py lab/kernels/measure_production_attention.py \
    lab/harness.py $W/*; cat $0; } > $OUT/env.txt 2>&1
mkdir -p /tmp/fa3src && tar -xJf $W/src.tar.xz -C /tmp/fa3src
python3 lab/kernels/build_fa3_binary.py /tmp/fa3src/src /tmp/fa3pkg --jobs 16 --mla > $OUT/build.log 2>&1; rc=$?
grep "compile wall\|FAIL\|link\|built" $OUT/build.log | head; echo "build rc $rc after $(el) s"
[ $rc -eq 0 ] || exit 4
gzip -1 -c /tmp/fa3pkg/flash_attn_3/_C.abi3.so > $OUT/fa3_mla_C.abi3.so.gz
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $OUT/clocks.csv 2>/dev/null &
SMI=$!
PYTHONUNBUFFERED=1 python3 lab/kernels/measure_mla_prefill.py --out /tmp/mla_out --pkg /tmp/fa3pkg \
  --budget-s $(( 540 - $(el) )) 2>&1 | tail -60
kill $SMI 2>/dev/null
cp /tmp/mla_out/mla_prefill.csv /tmp/mla_out/mla_prefill_grids.csv /tmp/mla_out/log.txt $OUT/ 2>/dev/null
echo "all done $(el) s"
