# Sourced by the device scripts written from session 16 on (the earlier run_* scripts stay as they ran, their md5s in
# their data's notes): flashinfer-python 0.6.4 for sm_90a from the carried wheels and prebuilt comm modules.
#   flashinfer_site W ENV_FILE   install $W/w.tar.xz's wheels into /tmp/site unless it is there already (a warm machine
#                                keeps it), unpack $W/aot.tar.xz's prebuilt vllm_comm / trtllm_ar_fusion_only modules into
#                                it, export PYTHONPATH / PATH / FLASHINFER_CUDA_ARCH_LIST / MAX_JOBS, and append the
#                                modules' md5s and flashinfer's version to ENV_FILE; returns 3 when the install fails
#                                (pip's output in ENV_FILE.pip)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
flashinfer_site() {
  local w=$1 env=$2
  if [ ! -d /tmp/site/flashinfer ]; then
    mkdir -p /tmp/whl && tar -xJf "$w/w.tar.xz" -C /tmp || return 3
    for d in /tmp/w/*/; do (cd "$d" && python3 -m zipfile -c "/tmp/whl/$(basename "$d").whl" $(ls -A)); done
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /tmp/whl/*.whl \
      > "$env.pip" 2>&1 || { cat "$env.pip"; return 3; }
    tar -xJf "$w/aot.tar.xz" -C /tmp/site/flashinfer/data || return 3
  fi
  export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=64
  md5sum /tmp/site/flashinfer/data/aot/*/*.so >> "$env"
  python3 -c "import flashinfer; print('flashinfer', flashinfer.__version__)" >> "$env" 2>&1
}
