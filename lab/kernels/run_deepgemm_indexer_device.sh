#!/bin/bash
# The device command of the DeepGEMM indexer campaign (lab/kernels/measure_deepgemm_indexer.py). Run from a folder
# holding this script's siblings (measure_deepgemm_indexer.py, _timing.py, ../harness.py copied beside them, dg_load.py,
# c10_shim.cpp) and whl/sgl_deep_gemm-0.2.5-*.whl:   bash run_deepgemm_indexer_device.sh OUT_DIR
# On the lent H100 (PyTorch 2.11.0+cu130) the wheel's _C.so does not work: it is built against a newer PyTorch (see
# docs/KNOWN_GAPS.md); c10_shim.cpp + dg_load.py get it loaded, but tensor metadata read inline (Tensor::dim()) is wrong.
set -eo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export DG_JIT_CACHE_DIR=$PWD/jitcache DJ_JIT_CACHE_DIR=$PWD/jitcache
TD=$(python3 -c "import torch,os;print(os.path.dirname(torch.__file__))")
g++ -std=c++17 -shared -fPIC -O2 -D_GLIBCXX_USE_CXX11_ABI=1 c10_shim.cpp -I$CUDA_HOME/include -I$TD/include \
  -I$TD/include/torch/csrc/api/include -L$CUDA_HOME/lib64 -lcudart -L$TD/lib -ltorch -ltorch_cpu -lc10 -o c10_shim.so
python3 measure_deepgemm_indexer.py --out "$1" 2>&1 | tee "$1/measure.log"
