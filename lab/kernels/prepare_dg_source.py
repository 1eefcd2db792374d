"""Assemble the DeepGEMM source tarball the indexer campaign builds on the device (lab/kernels/dg_upstream.py,
run_deepgemm_indexer_device.sh), outside the repository (never committed):

  csrc/, deep_gemm/include/deep_gemm   deepseek-ai/DeepGEMM @ 54e22612409371d6364144b69086735beb54e98b (git archive of a
                                       local mirror)
  deep_gemm/include/{cute,cutlass}     the sgl-deep-gemm 0.2.5 wheel's (CUTLASS 4.8.1)
  fmt/include/fmt                      fmtlib/fmt @ 553ec11ec06fbe0beebfbb45f9dc3c9eabd83d28 (DeepGEMM's submodule pin)

and the two patches the carried source had on 2026-11-27 (dg_upstream.py's docstring), rewritten here: DeepGEMM's
std::regex uses replaced by plain string scans with the same matches (csrc/jit/include_parser.hpp: `#\\s*include\\s*
[<"][^>"]+[>"]`; csrc/jit/compiler.hpp: `release (\\d+\\.\\d+)` in `nvcc --version` and `Local memory used` in ptxas'
log). Writes OUT/dgsrc.tar.xz and prints its md5.

    python lab/kernels/prepare_dg_source.py DEEPGEMM_GIT_DIR FMT_GIT_DIR SGL_DEEP_GEMM_WHEEL OUT_DIR
"""
from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

DG_COMMIT = "54e22612409371d6364144b69086735beb54e98b"
FMT_COMMIT = "553ec11ec06fbe0beebfbb45f9dc3c9eabd83d28"

INCLUDE_OLD = """        const std::regex pattern(R"(#\\s*include\\s*[<"][^>"]+[>"])");
        std::sregex_iterator iter(code.begin(), code.end(), pattern);
        const std::sregex_iterator end;

        // TODO: parse relative paths as well
        for (; iter != end; ++ iter) {
            const auto include_str = iter->str();"""
INCLUDE_NEW = """        // every match of #\\s*include\\s*[<"][^>"]+[>"], scanned without std::regex (sparsesim's carried patch)
        std::vector<std::string> found;
        for (size_t pos = code.find('#'); pos != std::string::npos; pos = code.find('#', pos + 1)) {
            size_t i = pos + 1;
            while (i < code.size() and std::isspace(static_cast<unsigned char>(code[i]))) ++ i;
            if (code.compare(i, 7, "include") != 0) continue;
            i += 7;
            while (i < code.size() and std::isspace(static_cast<unsigned char>(code[i]))) ++ i;
            if (i >= code.size() or (code[i] != '<' and code[i] != '"')) continue;
            size_t j = i + 1;
            while (j < code.size() and code[j] != '>' and code[j] != '"') ++ j;
            if (j >= code.size() or j == i + 1) continue;
            found.push_back(code.substr(pos, j + 1 - pos));
        }

        // TODO: parse relative paths as well
        for (const auto& include_str: found) {"""
VERSION_OLD = """        std::smatch match;
        DG_HOST_ASSERT(std::regex_search(output, match, std::regex(R"(release (\\d+\\.\\d+))")));
        std::sscanf(match[1].str().c_str(), "%d.%d", &major, &minor);"""
VERSION_NEW = """        // `release (\\d+\\.\\d+)` without std::regex (sparsesim's carried patch)
        const auto at = output.find("release ");
        DG_HOST_ASSERT(at != std::string::npos);
        const int parsed = std::sscanf(output.c_str() + at + 8, "%d.%d", &major, &minor);
        DG_HOST_ASSERT(parsed == 2);"""
LOCAL_OLD = """DG_HOST_ASSERT(not std::regex_search(output, std::regex(R"(Local memory used)")));"""
LOCAL_NEW = """DG_HOST_ASSERT(output.find("Local memory used") == std::string::npos);"""


def archive(git_dir: Path, commit: str, paths: list[str]) -> tarfile.TarFile:
    data = subprocess.run(["git", "--git-dir", str(git_dir), "archive", commit, *paths], capture_output=True,
                          check=True).stdout
    return tarfile.open(fileobj=io.BytesIO(data))


def main() -> None:
    dg_git, fmt_git, wheel, out = (Path(a) for a in sys.argv[1:5])
    out.mkdir(parents=True, exist_ok=True)
    dst = out / "dgsrc.tar.xz"
    with tarfile.open(dst, "w:xz") as tar:
        def add(name: str, payload: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(payload), 0o644
            tar.addfile(info, io.BytesIO(payload))

        src = archive(dg_git, DG_COMMIT, ["csrc", "deep_gemm/include/deep_gemm"])
        patched = 0
        for m in src.getmembers():
            if not m.isfile():
                continue
            text = src.extractfile(m).read()
            if m.name == "csrc/jit/include_parser.hpp":
                s = text.decode()
                assert INCLUDE_OLD in s, "include_parser.hpp changed: patch not applied"
                s = s.replace(INCLUDE_OLD, INCLUDE_NEW).replace("#include <regex>", "#include <cctype>")
                text, patched = s.encode(), patched + 1
            elif m.name == "csrc/jit/compiler.hpp":
                s = text.decode()
                assert VERSION_OLD in s and LOCAL_OLD in s, "compiler.hpp changed: patch not applied"
                s = s.replace(VERSION_OLD, VERSION_NEW).replace(LOCAL_OLD, LOCAL_NEW).replace("#include <regex>\n", "")
                text, patched = s.encode(), patched + 1
            add(m.name, text)
        assert patched == 2
        with zipfile.ZipFile(wheel) as z:
            for n in z.namelist():
                if n.startswith(("deep_gemm/include/cute/", "deep_gemm/include/cutlass/")) and not n.endswith("/"):
                    add(n, z.read(n))
        fmt = archive(fmt_git, FMT_COMMIT, ["include/fmt"])
        for m in fmt.getmembers():
            if m.isfile():
                add("fmt/" + m.name, fmt.extractfile(m).read())
    print(dst, dst.stat().st_size, hashlib.md5(dst.read_bytes()).hexdigest())


if __name__ == "__main__":
    main()
