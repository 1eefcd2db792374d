#!/bin/bash
# SGLANG'S FLASHINFER_MLA BACKEND OVER AN FP8 MLA CACHE on one H200: FlashInfer 0.6.4's MLA wrapper over the layer's
# whole pool cast to bf16 (lab/kernels/measure_fi_mla_fp8cast.py) at the shapes of the committed prediction
# (simulator/calibration/fi_mla_fp8cast_h200.py, lab/kernels/predict_fi_mla_fp8cast.py ->
# production_kernels/fi_mla_fp8cast_h200_prediction_2026-11-29.csv), then again on the warm machine (tag
# grid1_replicate). FlashInfer from the carried wheels in $W (lab/kernels/_flashinfer_site.sh: w.tar.xz = the
# flashinfer-python 0.6.4 and apache-tvm-ffi 0.1.9 cp312 wheels unpacked, aot.tar.xz = an empty aot/ folder); its MLA
# module built just in time (~20 s). Files packed into $OUT/fi_mla_fp8cast.tgz. From the repository root of the device
# copy:
#   W=.dev/fisw bash lab/kernels/run_fi_mla_fp8cast_device.sh
# GRID=extend: SGLang's extend over a cached prefix instead (fi_mla_extend_h200_prediction_2026-11-29.csv, tags extend1
# and extend1_replicate, $OUT/fi_mla_extend.tgz); GRID=extend2: its grid 2 (tags extend2*, $OUT/fi_mla_extend2.tgz);
# GRID=extend3: its grid 3 (tags extend3*, $OUT/fi_mla_extend3.tgz); GRID=boundary: FlashInfer's MLA decode where the
# plan's pieces straddle the clusters (fi_mla_boundary_h200_prediction_2026-11-29.csv, tags boundary*)
T0=$(date +%s)
W=${W:-.dev/fisw}
GRID=${GRID:-decode}
el() { echo $(( $(date +%s) - T0 )); }
P=hwmodels/calibration/data/production_kernels/fi_mla_fp8cast_h200_prediction_2026-11-29.csv; G=grid1; TGZ=fi_mla_fp8cast
[ "$GRID" = extend ] && { P=hwmodels/calibration/data/production_kernels/fi_mla_extend_h200_prediction_2026-11-29.csv; G=extend1; TGZ=fi_mla_extend; }
[ "$GRID" = extend2 ] && { P=hwmodels/calibration/data/production_kernels/fi_mla_extend_h200_grid2_prediction_2026-11-29.csv; G=extend2; TGZ=fi_mla_extend2; }
[ "$GRID" = boundary ] && { P=hwmodels/calibration/data/production_kernels/fi_mla_boundary_h200_prediction_2026-11-29.csv; G=boundary; TGZ=fi_mla_boundary; }
[ "$GRID" = extend3 ] && { P=hwmodels/calibration/data/production_kernels/fi_mla_extend_h200_grid3_prediction_2026-11-29.csv; G=extend3; TGZ=fi_mla_extend3; }
O=/tmp/ofmc_$GRID; mkdir -p $O
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nproc; md5sum lab/kernels/measure_fi_mla_fp8cast.py lab/kernels/measure_fa3_sparse_mla.py lab/kernels/_flashinfer_site.sh $P $W/*.xz; cat $0; } > $O/env.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 200 > $O/clocks.csv 2>/dev/null &
SMI=$!
pack() { kill $SMI 2>/dev/null; tar -czf $OUT/$TGZ.tgz -C $O . ; echo "packed at $(el) s"; }
. lab/kernels/_flashinfer_site.sh
flashinfer_site $W $O/env.txt || { pack; exit 3; }
echo "flashinfer ready $(el) s"
cd lab/kernels
export PYTHONPATH=$PWD:$PYTHONPATH
for TAG in $G ${G}_replicate; do
  timeout 240 python3 measure_fi_mla_fp8cast.py --out $O --shapes ../../$P --tag $TAG 2>&1 \
    | grep -v "^\s*$" | tee $O/log_$TAG.txt | tail -18
  echo "$TAG done at $(el) s"
done
pack
