#!/bin/bash
# s21ar: JIT-build flashinfer 0.6.4's two comm modules (vllm_comm, trtllm_ar_fusion_only) on one H100 with
# flashinfer's own JIT (as grid 8 did on the device) and return them as AOT modules (aot/<name>/<name>.so) for the x4 call.
# Run (kind nvidia-h100-x1): bash .dev/s21ar/build.sh with w.tar.xz (flashinfer 0.6.4 + apache-tvm-ffi 0.1.9 wheels) and
# measure_engine_allreduce.py in .dev/s21ar (carry it); returns $OUT/aot.tar.xz (aot/<name>/<name>.so) for
# lab/kernels/run_engine_allreduce_blind11.sh. On 2026-11-27: vllm_comm 15.8 s, trtllm_ar_fusion_only 118.4 s (16 cores),
# md5 7545941333a10537002cb9c9084e7e8d / 5b7d046d61ec366a1e63a15da8b44d28.
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
W=.dev/s21ar
S=lab/kernels/measure_engine_allreduce_s21.py
cp $W/measure_engine_allreduce.py $S
{ nvcc --version | tail -2; which ninja; nproc; python3 -c "import torch;print(torch.__version__, torch.version.cuda)"; } > $OUT/env.txt 2>&1
mkdir -p /tmp/whl && tar -xJf $W/w.tar.xz -C /tmp || exit 3
for d in /tmp/w/*/; do n=$(basename $d); (cd $d && python3 -m zipfile -c /tmp/whl/$n.whl $(ls -A)); done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /tmp/whl/*.whl > $OUT/pip.txt 2>&1 || { cat $OUT/pip.txt; exit 3; }
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=16 FLASHINFER_WORKSPACE_BASE=/tmp/fiws
echo "setup $(el) s"
timeout 270 python3 $S --out /tmp/x --impls vllm --build-only > $OUT/build_vllm.txt 2>&1 &
timeout 270 python3 $S --out /tmp/x --impls trtllm --build-only > $OUT/build_trt.txt 2>&1
wait
tail -3 $OUT/build_vllm.txt $OUT/build_trt.txt
echo "built $(el) s"
find /tmp/fiws -name '*.so' | tee $OUT/so.txt
for n in vllm_comm trtllm_ar_fusion_only; do
  f=$(find /tmp/fiws -name "$n.so" | head -1); [ -n "$f" ] || { echo "no $n.so"; continue; }
  mkdir -p /tmp/aot/aot/$n && cp $f /tmp/aot/aot/$n/$n.so
done
tar -cJf $OUT/aot.tar.xz -C /tmp/aot aot && ls -la $OUT && md5sum /tmp/aot/aot/*/*.so
echo "done $(el) s"
