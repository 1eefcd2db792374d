"""Import sgl-deep-gemm on a PyTorch older than the one its _C.so was built against: load c10_shim.so (symbols the
newer PyTorch has) first, then _C.so with lazy binding (functions of the newer PyTorch that are never called, e.g. its
exception-text helper, stay unresolved). On PyTorch 2.11 the ops' kernels land under the CPU dispatch key (the newer
dispatch-key numbering); they are the same host functions that launch DeepGEMM's CUDA kernels on the tensors' current
stream, so every op is called through the CPU key (OpOverload.redispatch)."""
import ctypes
import importlib.util
import os

import torch

here = os.path.dirname(os.path.abspath(__file__))
ctypes.CDLL(os.path.join(here, "c10_shim.so"), mode=ctypes.RTLD_GLOBAL)
_pkg = importlib.util.find_spec("deep_gemm").submodule_search_locations[0]
ctypes.CDLL(os.path.join(_pkg, "_C.so"), mode=os.RTLD_LAZY | os.RTLD_GLOBAL)
import deep_gemm  # noqa: E402

_CPU = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)


class _CpuKeyOps:
    def __getattr__(self, name):
        op = getattr(torch.ops.deep_gemm, name).default

        def call(*args):
            return op.redispatch(_CPU, *args)
        setattr(self, name, call)
        return call


deep_gemm._C = _CpuKeyOps()
