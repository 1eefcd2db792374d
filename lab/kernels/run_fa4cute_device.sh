#!/bin/bash
# Device side of lab/kernels/measure_fa4cute_attention.py (run from the repository root of the device's copy). The
# payload (a tar of the cu13 cutlass-dsl libs as .tar.xz + the flash-attn-4 / cutlass-dsl / quack / tvm-ffi wheels)
# does not fit one call beside the working tree, so earlier back-to-back calls copied 12 MB chunks of it into
# /tmp/i25fa_acc (outside the tree: ignored folders inside it did not survive between calls); this last call adds
# the last chunk, checks the md5, installs only the missing packages, then measures.
# $1: measuring budget (s); $2: the grid (campaign, or blind: measure_fa4cute_attention.py blind_shapes(), run with
# 95 s on 2026-11-27 and timed a second time on the same warm machine for the _repeat file); $3: the folder holding
# the copies of measure_fa4cute_attention.py, harness.py and measure_production_attention.py (default .dev/i25fa/run)
export PYTHONUNBUFFERED=1
BUDGET=${1:-150}
GRID=${2:-campaign}
RUN=${3:-.dev/i25fa/run}
nvidia-smi > $OUT/nvidia-smi.txt 2>&1
cp .dev/i25fa/c7/chunk.* /tmp/i25fa_acc/; cat /tmp/i25fa_acc/chunk.? > /tmp/payload.tar
echo "md5 $(md5sum /tmp/payload.tar | cut -c1-32) want $(cat .dev/i25fa/run/payload.md5)"
mkdir -p /tmp/pl /tmp/site && tar -xf /tmp/payload.tar -C /tmp/pl && tar -xJf /tmp/pl/part1/*.tar.xz -C /tmp/site || exit 3
W=/tmp/pl/part2/whl
LIST="$W/flash_attn_4-*.whl $W/nvidia_cutlass_dsl-*.whl $W/nvidia_cutlass_dsl_libs_base-*.whl $W/nvidia_cutlass_dsl_libs_core-*.whl $W/quack_kernels-*.whl"
for pair in apache-tvm-ffi:apache_tvm_ffi torch-c-dlpack-ext:torch_c_dlpack_ext einops:einops protobuf:protobuf cuda-pathfinder:cuda_pathfinder cuda-bindings:cuda_bindings; do
  n=${pair%%:*}; f=${pair##*:}
  v=$(python3 -c "import importlib.metadata as m; print(m.version('$n'))" 2>/dev/null)
  if [ -z "$v" ]; then LIST="$LIST $W/${f}-*.whl"; echo "install $n"; else echo "have $n $v"; fi
done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site_w $LIST 2>&1 | tail -3
cp -a /tmp/site_w/. /tmp/site/
export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
python3 -c "import torch, cutlass, flash_attn.cute.interface as f; print('import ok', torch.__version__, torch.version.cuda, cutlass.__file__)" 2>&1 | tail -5
cd $RUN && python3 measure_fa4cute_attention.py --grid $GRID --out $OUT --budget-s $BUDGET > $OUT/stdout.txt 2>&1
tail -45 $OUT/stdout.txt
