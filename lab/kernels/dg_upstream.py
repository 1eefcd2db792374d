"""DeepGEMM's indexer (and, with DG_API_GROUPS, block-scaled fp8 GEMM) entry points built on the measuring machine
against its own PyTorch (the sgl-deep-gemm wheel's _C.so is built against a newer PyTorch and cannot run there).

Source (not committed; unpacked beside this file from dgsrc.tar.xz by run_deepgemm_indexer_device.sh):
  deepseek-ai/DeepGEMM at 54e22612409371d6364144b69086735beb54e98b (2026-06-23): csrc/ and deep_gemm/include/deep_gemm;
  CUTLASS / CuTe headers from sgl-deep-gemm 0.2.5's wheel (deep_gemm/include/{cute,cutlass}, CUTLASS 4.8.1);
  fmt headers at fmtlib/fmt 553ec11 (the submodule commit DeepGEMM pins).
Carried-source patches (made in .dev only): jit/include_parser.hpp and jit/compiler.hpp find `#include` lines and the
nvcc release number without std::regex (same matches). Only the API groups API_GROUPS names are compiled (attention
and runtime by default; a copy of csrc/python_api.cpp with those groups alone, written here), with torch.utils.cpp_extension.load; kernels are JIT-compiled by nvcc on first use, as in any DeepGEMM build.

The names and argument order the measuring script uses are those of sgl-deep-gemm 0.2.5; 0.2.5 has no logits-cleaning
pass, so clean_logits=False here (DeepGEMM's default for the paged kernel; its prefill default is True).
"""
from __future__ import annotations

import os
import time

from torch.utils.cpp_extension import load

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "dgsrc")
BUILD = "deepseek-ai/DeepGEMM 54e2261 (built here against the machine's torch; CUTLASS 4.8.1 from sgl-deep-gemm 0.2.5)"
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")

#: the API groups compiled (DG_API_GROUPS, comma-separated; each one a csrc/apis/<group>.hpp with register_apis): the
#: indexer campaign's "attention,runtime" (default), the block-scaled GEMM campaign's "gemm,layout,runtime"
#: (csrc/apis/gemm.hpp registers fp8_gemm_nt = fp8_fp4_gemm_nt, csrc/apis/layout.hpp get_mn_major_tma_aligned_tensor;
#: deepseek-ai/DeepGEMM @ 54e22612409371d6364144b69086735beb54e98b)
API_GROUPS = tuple(g for g in os.environ.get("DG_API_GROUPS", "attention,runtime").split(",") if g)
_ALLOWED_GROUPS = ("attention", "gemm", "layout", "runtime")
if any(g not in _ALLOWED_GROUPS for g in API_GROUPS):
    raise SystemExit(f"DG_API_GROUPS={API_GROUPS!r}: allowed {_ALLOWED_GROUPS}")
_API = ("#include <pybind11/pybind11.h>\n#include <torch/python.h>\n"
        + "".join(f'#include "apis/{g}.hpp"\n' for g in API_GROUPS)
        + "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
        + "".join(f"    deep_gemm::{g}::register_apis(m);\n" for g in API_GROUPS) + "}\n")
_TAG = "" if API_GROUPS == ("attention", "runtime") else "_" + "_".join(API_GROUPS)


# DeepGEMM's device runtime holds a cuBLASLt handle: link the toolkit's cuBLAS where it has one, else the symbols come
# from the cuBLAS libtorch_cuda already loads
_CUBLAS = ["-lcublasLt", "-lcublas"] if os.path.exists(f"{CUDA_HOME}/lib64/libcublasLt.so") else []


# On the lent machine (2026-11-27) the extension, linked the plain way, crashed in its first std::regex
# (std::regex_traits<char>::transform_primary reached a wrong facet; pytorch/pytorch#109923 shows the same pattern), and,
# with DeepGEMM's two std::regex uses replaced in the carried source, still crashed at its next step. Suspected: the
# extension's own instantiations of libstdc++ templates are exported weak and bind, by ELF interposition, to copies in
# libraries the process loaded first (built with other libstdc++ headers), or its locale facet ids do not match the
# process's locale. Link modes (DG_LINK_MODE; neither "bsymbolic" nor "own_libstdcxx" has run yet):
#   plain          what crashed
#   bsymbolic      -Wl,-Bsymbolic-functions: the extension calls its own template instantiations
#   own_libstdcxx  that plus its own libstdc++, linked statically with its symbols hidden (own locale machinery)
_LINK = {"plain": [],
         "bsymbolic": ["-Wl,-Bsymbolic-functions"],
         "own_libstdcxx": ["-Wl,-Bsymbolic-functions", "-static-libstdc++", "-Wl,--exclude-libs,ALL"]}
LINK_MODE = os.environ.get("DG_LINK_MODE", "bsymbolic")
if LINK_MODE not in _LINK:
    raise SystemExit(f"DG_LINK_MODE={LINK_MODE!r}: allowed {sorted(_LINK)}")
BUILD += f", link mode {LINK_MODE}"


def _build_dir():
    d = os.path.join(os.environ.get("DG_BUILD_DIR", "/tmp/dg_build"), LINK_MODE + _TAG)
    os.makedirs(d, exist_ok=True)
    return d


def _prebuilt():
    """The extension built by an earlier call on the same machine image (DG_PREBUILT_SO: the .so that _build wrote into
    its build directory), loaded as is, or None where no such file is named or it does not exist."""
    path = os.environ.get("DG_PREBUILT_SO", "")
    if not path or not os.path.exists(path):
        return None
    import importlib.util

    t0 = time.time()
    try:
        spec = importlib.util.spec_from_file_location(f"dg_indexer_C_{LINK_MODE}{_TAG}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    except Exception as ex:  # noqa: BLE001 - built here instead
        print("deep_gemm prebuilt host extension", path, "not loaded:", type(ex).__name__, str(ex)[:200], flush=True)
        return None
    print("deep_gemm host extension", LINK_MODE, "loaded prebuilt", path, "in", round(time.time() - t0, 1), "s",
          flush=True)
    return mod


def _build():
    pre = _prebuilt()
    if pre is not None:
        pre.init(os.path.join(SRC, "deep_gemm"), CUDA_HOME)
        return pre
    api = os.path.join(SRC, "csrc", f"indexer_api{_TAG}.cpp")
    if not os.path.exists(api) or open(api).read() != _API:   # an unchanged source is not rebuilt
        with open(api, "w") as fh:
            fh.write(_API)
    t0 = time.time()
    mod = load(name=f"dg_indexer_C_{LINK_MODE}{_TAG}", sources=[api],
               extra_include_paths=[f"{CUDA_HOME}/include", f"{CUDA_HOME}/include/cccl",
                                    os.path.join(SRC, "deep_gemm", "include"), os.path.join(SRC, "fmt", "include")],
               extra_cflags=["-O2", "-Wno-psabi", "-Wno-deprecated-declarations"],   # the C++ standard torch asks for
               extra_ldflags=[f"-L{CUDA_HOME}/lib64", "-lcudart", "-lnvrtc"] + _CUBLAS + _LINK[LINK_MODE],
               build_directory=_build_dir(), with_cuda=True, verbose=False)
    print("deep_gemm host extension", LINK_MODE, "built/loaded in", round(time.time() - t0, 1), "s", flush=True)
    mod.init(os.path.join(SRC, "deep_gemm"), CUDA_HOME)
    return mod


_C = _build()


def get_num_sms():
    return _C.get_num_sms()


def get_paged_mqa_logits_metadata(context_lens, block_kv, num_sms):
    return _C.get_paged_mqa_logits_metadata(context_lens, block_kv, num_sms)


def fp8_fp4_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len):
    return _C.fp8_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len, False)


def fp8_fp4_mqa_logits(q, kv, weights, cu_seq_len_k_start, cu_seq_len_k_end, max_seqlen_k):
    return _C.fp8_mqa_logits(q, kv, weights, cu_seq_len_k_start, cu_seq_len_k_end, False, max_seqlen_k)


def fp8_gemm_nt(a, sfa, b, sfb, d):
    """d[M, N] (bf16) = (a[M, K] fp8 x sfa[M, K / 128]) @ (b[N, K] fp8 x sfb[N / 128, K / 128]).T: DeepGEMM's
    fp8_gemm_nt with its default recipe, which on SM90 with fp32 scales dispatches to sm90_fp8_gemm_1d2d
    (csrc/apis/gemm.hpp fp8_fp4_gemm_nt @ 54e2261); needs DG_API_GROUPS with gemm and layout."""
    _C.fp8_gemm_nt((a, sfa), (b, sfb), d)


def get_mn_major_tma_aligned_tensor(sf):
    """sf in the MN-major, TMA-aligned layout the 1D2D kernel reads (a tensor already so laid out is returned as is,
    so a timed call does no transpose: csrc/jit_kernels/impls/smxx_layout.hpp @ 54e2261)."""
    return _C.get_mn_major_tma_aligned_tensor(sf)
