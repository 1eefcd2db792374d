"""Build flashinfer 0.6.4's two comm modules (vllm_comm, trtllm_ar_fusion_only) OFF the device, with flashinfer's own
JIT spec code (jit/core.py gen_jit_spec + jit/cpp_ext.py generate_ninja_build_for_op, same flags: -O3 -use_fast_math,
-gencode=arch=compute_90a,code=sm_90a) and the same nvcc (13.0 V13.0.88) as the 4 x H100 device, so the device loads
them as flashinfer AOT modules (flashinfer/data/aot/<name>/<name>.so, which JitSpec.build_and_load loads without
compiling) instead of spending ~160 s of its call in the JIT (grid 8). Used for blind grid 9
(lab/kernels/run_engine_allreduce_blind9.sh; the modules' md5 are in the grid's _env.txt).

    PYTHONPATH=STUBS python lab/kernels/prebuild_flashinfer_comm.py SITE OUTDIR     (S18AR_ONLY=<name>: one module)

SITE: the two wheels unzipped (flashinfer_python-0.6.4, apache_tvm_ffi-0.1.9). STUBS: build-only stand-ins, as this
host has neither torch nor a Python for tvm_ffi's cp312 wheel: torch (_C._GLIBCXX_USE_CXX11_ABI = True as torch 2.11,
version.cuda "13.0", cuda.device_count() 0, any other attribute a string), tvm_ffi.libinfo (find_include_path /
find_dlpack_include_path -> SITE/tvm_ffi/include), filelock.FileLock (a null context). The translation units compile
here; where the host has no CUDA lib64/stubs the link is then run by hand as ninja writes it, against the toolkit's
libcudart and a stub libcuda.so (SONAME libcuda.so.1 defining the cu* symbols the objects use):
    c++ OBJ -shared -L/usr/local/cuda/lib64 -L STUBDIR -lcudart -lcuda -o <name>.so
(trtllm_allreduce_fusion.cu alone took 770 s on this shared 2-core host; vllm_custom_all_reduce.cu ~3 min.)"""
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path

site, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
os.environ["FLASHINFER_CUDA_ARCH_LIST"] = "9.0a"
os.environ["FLASHINFER_WORKSPACE_BASE"] = str(out / "ws")
os.environ.setdefault("S18AR_TVMFFI", str(site / "tvm_ffi"))
for pkg in ("flashinfer", "flashinfer.jit"):            # skip the packages' __init__ (they import all of flashinfer)
    m = types.ModuleType(pkg)
    m.__path__ = [str(site / pkg.replace(".", "/"))]
    sys.modules[pkg] = m
core = importlib.import_module("flashinfer.jit.core")
jit_env = importlib.import_module("flashinfer.jit.env")
ctx = core.current_compilation_context
specs = {
    "vllm_comm": core.gen_jit_spec("vllm_comm", [jit_env.FLASHINFER_CSRC_DIR / "vllm_custom_all_reduce.cu"]),
    "trtllm_ar_fusion_only": core.gen_jit_spec(
        "trtllm_ar_fusion_only", [jit_env.FLASHINFER_CSRC_DIR / "trtllm_allreduce_fusion.cu"],
        extra_cuda_cflags=ctx.get_nvcc_flags_list(supported_major_versions=[9, 10])),
}
for name, spec in specs.items():
    if os.environ.get("S18AR_ONLY", name) != name:
        continue
    t0 = time.time()
    spec.write_ninja()
    subprocess.run(["ninja", "-v", "-C", str(spec.build_dir), "-f", str(spec.ninja_path)], check=True)
    dst = out / "aot" / name
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy(spec.jit_library_path, dst / f"{name}.so")
    shutil.copy(spec.ninja_path, dst / "build.ninja")
    print(f"{name}: built in {time.time() - t0:.0f} s -> {dst}", flush=True)
