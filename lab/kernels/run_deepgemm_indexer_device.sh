#!/bin/bash
# The device command of the DeepGEMM indexer campaign (lab/kernels/measure_deepgemm_indexer.py). Run from a folder
# holding this script's siblings (measure_deepgemm_indexer.py, dg_upstream.py, _timing.py and ../harness.py copied
# beside them) and dgsrc.tar.xz (DeepGEMM's csrc/ and deep_gemm/include at the commit dg_upstream.py names, CUTLASS/CuTe
# and fmt headers; never committed):   bash run_deepgemm_indexer_device.sh OUT_DIR [measure args...]
# DeepGEMM's host code is compiled there against the machine's own PyTorch (dg_upstream.py), the kernels by DeepGEMM's
# JIT (nvcc) on first use; the measuring script checks every kernel against a torch reference before timing anything.
set -eo pipefail
out=$1; shift
mkdir -p "$out" dgsrc
tar -xJf dgsrc.tar.xz -C dgsrc
export PYTHONUNBUFFERED=1 CUDA_HOME=${CUDA_HOME:-/usr/local/cuda} MAX_JOBS=16
export DG_JIT_CACHE_DIR=/tmp/dg_jit DG_BUILD_DIR=/tmp/dg_build
gcc --version | head -1
python3 -c "import sysconfig, os; p = sysconfig.get_paths()['include']; print(p, os.path.exists(p + '/Python.h'))"
# which of torch's libraries export libstdc++'s locale facet ids (std::collate<char>::id), the suspected cause of the crash
python3 -c "
import glob, os, subprocess, torch
for f in sorted(glob.glob(os.path.dirname(torch.__file__) + '/lib/*.so*')):
    out = subprocess.run(['nm', '-D', '--defined-only', f], capture_output=True, text=True).stdout
    n = sum('_ZNSt7collateIcE2idE' in line for line in out.splitlines())
    print('exports std::collate<char>::id:', os.path.basename(f)) if n else None
"
# the first link mode (dg_upstream.py) whose build survives a schedule-metadata call measures
for mode in ${DG_LINK_MODES:-bsymbolic own_libstdcxx}; do
  if DG_LINK_MODE=$mode python3 -X faulthandler -c "
import torch, dg_upstream as dg
m = dg.get_paged_mqa_logits_metadata(torch.full((3, 1), 1000, device='cuda', dtype=torch.int32), 64, dg.get_num_sms())
torch.cuda.synchronize()
print('link mode $mode: metadata call ok', m[:2].tolist())
"; then export DG_LINK_MODE=$mode; break; fi
  echo "link mode $mode: crashed"
done
[ -n "$DG_LINK_MODE" ] || { echo "every link mode crashed"; exit 3; }
python3 -X faulthandler measure_deepgemm_indexer.py --out "$out" "$@" 2>&1 | tee "$out/measure.log"
