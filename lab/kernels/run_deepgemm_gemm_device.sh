#!/bin/bash
# The device command of the block-scaled fp8 GEMM campaign (lab/kernels/measure_deepgemm_gemm.py). Run from a folder
# holding this script, measure_deepgemm_gemm.py, dg_upstream.py, _timing.py, harness.py (lab/harness.py), the grid CSV
# and dgsrc.tar.xz (DeepGEMM 54e2261's csrc/ and deep_gemm/include, CUTLASS/CuTe and fmt headers; never committed):
#     bash run_deepgemm_gemm_device.sh OUT_DIR GRID.csv [JIT_WORKERS [TAG]]
# With DG_PREBUILT_SO=PATH (an earlier call's OUT/dg_host_ext.so.xz, unpacked) the host code is loaded, not built.
# DeepGEMM's host code (the gemm, layout and runtime API groups) is compiled there against the machine's PyTorch in
# link mode own_libstdcxx (the mode that ran for the indexer campaign; deepgemm_indexer_attempt_2026-11-27_notes.txt),
# the kernels by DeepGEMM's JIT (nvcc), pre-compiled by JIT_WORKERS processes in parallel before the measuring pass.
set -eo pipefail
out=$1; grid=$2; workers=${3:-12}; tag=${4:-blind}
mkdir -p "$out" dgsrc
tar -xJf dgsrc.tar.xz -C dgsrc
export PYTHONUNBUFFERED=1 CUDA_HOME=${CUDA_HOME:-/usr/local/cuda} MAX_JOBS=16
export DG_JIT_CACHE_DIR=/tmp/dg_jit DG_BUILD_DIR=/tmp/dg_build DG_LINK_MODE=${DG_LINK_MODE:-own_libstdcxx}
export DG_API_GROUPS=gemm,layout,runtime DG_PRINT_CONFIGS=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
python3 -X faulthandler measure_deepgemm_gemm.py --grid "$grid" --out "$out" --jit-workers "$workers" --tag "$tag" 2>&1 \
  | tee "$out/measure_$tag.log"
# the host extension this call built (none where DG_PREBUILT_SO named one), xz-compressed into OUT so that a later call
# on the same machine image loads it as is (dg_upstream.py DG_PREBUILT_SO) instead of building it again (~35 s)
so=$(ls "$DG_BUILD_DIR"/*/dg_indexer_C_*.so 2>/dev/null | head -1 || true)
if [ -z "${DG_PREBUILT_SO:-}" ] && [ -n "$so" ]; then xz -T4 -c "$so" > "$out/dg_host_ext.so.xz"; fi
