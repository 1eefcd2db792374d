"""Import sgl-deep-gemm on a PyTorch older than the one its _C.so was built against: load c10_shim.so (two c10 symbols
the newer PyTorch has) first, then _C.so with lazy binding (functions of the newer PyTorch that are never called, e.g.
its exception-text helper, stay unresolved)."""
import ctypes
import importlib.util
import os

import torch  # noqa: F401  (libtorch / libc10 loaded first)

here = os.path.dirname(os.path.abspath(__file__))
ctypes.CDLL(os.path.join(here, "c10_shim.so"), mode=ctypes.RTLD_GLOBAL)
_pkg = importlib.util.find_spec("deep_gemm").submodule_search_locations[0]
ctypes.CDLL(os.path.join(_pkg, "_C.so"), mode=os.RTLD_LAZY | os.RTLD_GLOBAL)
