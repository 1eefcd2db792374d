#!/usr/bin/env python3
"""Build a trimmed FlashAttention-3 (hopper/) forward extension: hdim 128, bf16 + fp8 e4m3, paged/split/PackGQA,
combine + prepare-scheduler kernels, no backward/softcap/local/fp16/cluster/other head dims.

Flags follow flash-attention hopper/setup.py @ 0251105a (nvcc_flags, feature_args, sources rule
`not (packgqa and (paged or split))`, flash_api_stable.cpp for torch >= 2.9). Compiles every file in parallel with
plain nvcc / g++ and links one shared library pkg/flash_attn_3/_C.abi3.so.
usage: build_fa3.py SRC_DIR OUT_PKG_DIR [--jobs N] [--only FILE] [--mla | --mla-decode]  (--only: compile one file, no
link: a smoke test; --mla: also the bf16 hdim 192 x 128 forward instantiations, MLA's non-absorbed prefill, with
flash_api.cpp's 192 x 192 and e4m3 192 dispatches cut out of the copy it compiles, so that no other hdim 192
instantiation is needed; --mla-decode: ONLY the bf16 hdim 64 x 512 forward instantiations (MLA's absorbed decode with
qv, the path SGLang's DSA backend takes over a bf16 cache: prepare_fa3_source.sh SET=mla_decode), every other head dim
disabled and flash_api.cpp's hdim 64 x 64 / 64 x 256 / fp16 / e4m3 hdim 64 dispatches cut out of the copy it compiles)
"""
import argparse
import os
import subprocess
import sys
import sysconfig
import time
from concurrent.futures import ThreadPoolExecutor

DISABLE = ["BACKWARD", "SOFTCAP", "LOCAL", "FP16", "CLUSTER", "HDIM64", "HDIM96", "HDIM192", "HDIM256", "SM8x",
           "HDIMDIFF64", "HDIMDIFF192", "APPENDKV"]
ALL_FLAGS = ["BACKWARD", "SPLIT", "PAGEDKV", "APPENDKV", "LOCAL", "SOFTCAP", "PACKGQA", "FP16", "FP8", "VARLEN",
             "CLUSTER", "HDIM64", "HDIM96", "HDIM128", "HDIM192", "HDIM256", "SM8x"]


def feature_args():
    out = []
    for f in DISABLE:
        # hopper/setup.py spells the two HDIMDIFF macros with FLASH_ATTENTION_ (sic); keep its spelling
        pre = "FLASH_ATTENTION_DISABLE_" if f.startswith("HDIMDIFF") else "FLASHATTENTION_DISABLE_"
        out.append(f"-D{pre}{f}")
    return out


MLA_VARIANTS = ("", "_packgqa", "_split", "_paged", "_paged_split")


def sources(src, mla=False, mla_decode=False):
    h = os.path.join(src, "hopper")
    if mla_decode:
        inst = [f"instantiations/flash_fwd_hdim64_512_bf16{v}_sm90.cu" for v in MLA_DECODE_VARIANTS]
        return [os.path.join(h, s) for s in inst + ["flash_fwd_combine.cu", "flash_prepare_scheduler.cu",
                                                     "flash_api_stable_mla_decode.cpp"]]
    inst = [f"instantiations/flash_fwd_hdim128_{dt}{v}_sm90.cu" for dt in ("bf16", "e4m3")
            for v in ("", "_packgqa", "_split", "_paged", "_paged_split")]
    if mla:
        inst += [f"instantiations/flash_fwd_hdim192_128_bf16{v}_sm90.cu" for v in MLA_VARIANTS]
    api = "flash_api_stable_mla.cpp" if mla else "flash_api_stable.cpp"
    return [os.path.join(h, s) for s in inst + ["flash_fwd_combine.cu", "flash_prepare_scheduler.cu", api]]


MLA_DECODE_VARIANTS = ("", "_packgqa", "_split", "_paged", "_paged_split")


def mla_decode_api(src):
    """hopper/flash_api_stable_mla_decode.cpp: flash_api_stable.cpp with every hdim 64 dispatch but bf16 64 x 512 replaced
    by an error (the build compiles only the bf16 hdim 64 x 512 instantiations)."""
    import re
    h = os.path.join(src, "hopper")
    text = open(os.path.join(h, "flash_api_stable.cpp")).read()
    n0 = text.count("run_mha_fwd_<")
    text = re.sub(r"return run_mha_fwd_<([^;]*?)(cutlass::half_t|cutlass::float_e4m3_t), 64, (64|256|512), ([^;]*?)>"
                  r"\(params, stream\);", 'STD_TORCH_CHECK(false, "hdim 64 fp16 / e4m3: not in this build");', text)
    text = re.sub(r"return run_mha_fwd_<([^;]*?)cutlass::bfloat16_t, 64, (64|256), ([^;]*?)>\(params, stream\);",
                  'STD_TORCH_CHECK(false, "hdim 64 x 64 / 64 x 256: not in this build");', text)
    assert "bfloat16_t, 64, 512" in text and text.count("run_mha_fwd_<") < n0, "flash_api_stable.cpp changed"
    open(os.path.join(h, "flash_api_stable_mla_decode.cpp"), "w").write(text)


def mla_api(src):
    """hopper/flash_api_stable_mla.cpp: flash_api_stable.cpp with HDIM192 and HDIMDIFF192 on, and every hdim 192
    dispatch but bf16 192 x 128 replaced by an error (the build compiles no other hdim 192 instantiation)."""
    import re
    h = os.path.join(src, "hopper")
    text = open(os.path.join(h, "flash_api_stable.cpp")).read()
    n0 = text.count("run_mha_fwd_<")
    text = re.sub(r"return run_mha_fwd_<([^;]*?), 192, 192, ([^;]*?)>\(params, stream\);",
                  'STD_TORCH_CHECK(false, "hdim 192 x 192: not in this build");', text)
    text = re.sub(r"return run_mha_fwd_<([^;]*?)(cutlass::half_t|cutlass::float_e4m3_t), 192, 128, ([^;]*?)>"
                  r"\(params, stream\);", 'STD_TORCH_CHECK(false, "hdim 192 x 128 fp16 / e4m3: not in this build");', text)
    assert "bfloat16_t, 192, 128" in text and text.count("run_mha_fwd_<") < n0, "flash_api_stable.cpp changed"
    open(os.path.join(h, "flash_api_stable_mla.cpp"), "w").write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("pkg")
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--only", default=None)
    ap.add_argument("--torch-include", default=None, help="override torch include dirs (CPU smoke test)")
    ap.add_argument("--mla", action="store_true", help="also the bf16 hdim 192 x 128 forward (module docstring)")
    ap.add_argument("--mla-decode", action="store_true", help="only the bf16 hdim 64 x 512 forward (module docstring)")
    a = ap.parse_args()
    if a.mla_decode:
        for f in ("HDIM64", "HDIMDIFF64"):
            DISABLE.remove(f)
        DISABLE.extend(["HDIM128", "FP8"])
        mla_decode_api(a.src)
    if a.mla:
        DISABLE.remove("HDIM192")
        DISABLE.remove("HDIMDIFF192")
        mla_api(a.src)
    import torch.utils.cpp_extension as ce
    cuda_home = ce.CUDA_HOME or "/usr/local/cuda"
    if a.torch_include:
        tinc = a.torch_include.split(":")
    else:
        try:
            tinc = ce.include_paths(device_type="cuda")
        except TypeError:
            tinc = ce.include_paths(cuda=True)
    hop = os.path.join(a.src, "hopper")
    inc = [hop, os.path.join(a.src, "cutlass", "include"), os.path.join(a.src, "cutlass", "tools", "util", "include"),
           os.path.join(cuda_home, "include"), sysconfig.get_paths()["include"]] + tinc
    incf = [f"-I{p}" for p in inc]
    common_nvcc = getattr(ce, "COMMON_NVCC_FLAGS", [])
    nvcc = [os.path.join(cuda_home, "bin", "nvcc"), "-O3", "-std=c++17", "--ftemplate-backtrace-limit=0",
            "--use_fast_math", "-DCUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED", "-DCUTLASS_ENABLE_GDC_FOR_SM90",
            "-DCUTLASS_DEBUG_TRACE_LEVEL=0", "-DNDEBUG", "-gencode", "arch=compute_90a,code=sm_90a",
            "--compiler-options", "-fPIC", "--expt-relaxed-constexpr"] + list(common_nvcc) + feature_args()
    cxx = ["g++", "-O3", "-std=c++17", "-fPIC", "-DPy_LIMITED_API=0x03090000",
           "-DTORCH_TARGET_VERSION=0x0209000000000000", "-DTORCH_EXTENSION_NAME=_C",
           "-DTORCH_API_INCLUDE_EXTENSION_H"] + feature_args()
    objdir = os.path.join(a.pkg, "obj")
    os.makedirs(objdir, exist_ok=True)
    srcs = sources(a.src, a.mla, a.mla_decode)
    if a.only:
        srcs = [s for s in srcs if s.endswith(a.only)]

    def comp(s):
        o = os.path.join(objdir, os.path.basename(s) + ".o")
        cmd = (cxx if s.endswith(".cpp") else nvcc) + incf + ["-c", s, "-o", o]
        t = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True)
        dt = time.time() - t
        print(f"[{'ok' if r.returncode == 0 else 'FAIL'}] {os.path.basename(s)} {dt:.0f}s", flush=True)
        if r.returncode != 0:
            print(" ".join(cmd)[:2000])
            print(r.stderr[-6000:], flush=True)
        return r.returncode, o

    t0 = time.time()
    with ThreadPoolExecutor(a.jobs) as ex:
        res = list(ex.map(comp, sorted(srcs, key=lambda s: s.endswith(".cpp"))))
    print(f"compile wall {time.time() - t0:.0f}s", flush=True)
    if any(rc for rc, _ in res):
        sys.exit(2)
    if a.only:
        return
    os.makedirs(os.path.join(a.pkg, "flash_attn_3"), exist_ok=True)
    so = os.path.join(a.pkg, "flash_attn_3", "_C.abi3.so")
    try:
        lpaths = ce.library_paths(device_type="cuda")
    except TypeError:
        lpaths = ce.library_paths(cuda=True)
    lib = [f"-L{p}" for p in lpaths] + [f"-L{cuda_home}/lib64", f"-Wl,-rpath,{lpaths[0]}"]
    link = ["g++", "-shared", "-o", so] + [o for _, o in res] + lib + [
        "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_cuda", "-lc10_cuda", "-lcudart", "-lcuda"]
    r = subprocess.run(link, capture_output=True, text=True)
    print("link", r.returncode, r.stderr[-3000:], flush=True)
    if r.returncode != 0:
        sys.exit(3)
    with open(os.path.join(a.pkg, "flash_attn_3", "__init__.py"), "w") as f:
        f.write('__version__ = "3.0.0+0251105a.trim"\n')
    with open(os.path.join(a.pkg, "flash_attn_config.py"), "w") as f:
        flags = {f"FLASHATTENTION_DISABLE_{k}": (k in DISABLE) for k in ALL_FLAGS}
        flags.update({"FLASH_ATTENTION_DISABLE_HDIMDIFF64": "HDIMDIFF64" in DISABLE,
                      "FLASH_ATTENTION_DISABLE_HDIMDIFF192": "HDIMDIFF192" in DISABLE})
        f.write(f"CONFIG = {{'build_flags': {flags!r}}}\n")
    import shutil
    shutil.copy(os.path.join(hop, "flash_attn_interface.py"), os.path.join(a.pkg, "flash_attn_interface.py"))
    print("built", so, os.path.getsize(so), flush=True)


if __name__ == "__main__":
    main()
