"""Committed measurement files that may be stored gzip-compressed.

The larger measured CSV / log / text files under ``hwmodels/calibration/data`` are committed as ``NAME.gz``
(``gzip -n -9``, so the bytes are reproducible) to keep the installed package and the repository small. A file's
*logical* name is its name without the ``.gz``; readers look files up by logical name and accept either form:

- ``resolve(path)``: ``path`` if it exists, else ``path.gz`` if that exists, else ``path`` unchanged (so a
  missing-file error names the file the caller asked for);
- ``glob(folder, pattern)``: files matching ``pattern`` or ``pattern + ".gz"``; where both forms of one logical
  name exist (a script just rewrote the plain file), the plain one wins and the pair counts once;
- ``name`` / ``stem`` / ``suffix``: the logical name's parts (``X_repeat.csv.gz`` -> ``X_repeat.csv``,
  ``X_repeat``, ``.csv``), for the filters and labels that used ``Path.name`` / ``.stem`` / ``.suffix``;
- ``read_text(path)`` / ``open_text(path)``: the text of a plain or gzipped file (``pandas.read_csv`` reads
  ``.csv.gz`` by itself).
"""
from __future__ import annotations

import gzip
from pathlib import Path
from typing import IO

GZ = ".gz"


def resolve(path: str | Path) -> Path:
    """``path``, or its ``.gz`` form when only that is committed."""
    p = Path(path)
    if p.exists() or p.name.endswith(GZ):
        return p
    gz = p.with_name(p.name + GZ)
    return gz if gz.exists() else p


def glob(folder: str | Path, pattern: str) -> list[Path]:
    """Files in ``folder`` matching ``pattern`` in plain or ``.gz`` form, one per logical name, sorted by it."""
    d = Path(folder)
    found: dict[str, Path] = {}
    for p in d.glob(pattern + GZ):
        found.setdefault(name(p), p)
    for p in d.glob(pattern):
        found[name(p)] = p            # the plain file wins over a stale .gz of the same logical name
    return [found[k] for k in sorted(found)]


def name(path: str | Path) -> str:
    """The file name without a trailing ``.gz``."""
    n = Path(path).name
    return n[:-len(GZ)] if n.endswith(GZ) else n


def stem(path: str | Path) -> str:
    """``Path.stem`` of the logical name (``a_repeat.csv.gz`` -> ``a_repeat``)."""
    return Path(name(path)).stem


def suffix(path: str | Path) -> str:
    """``Path.suffix`` of the logical name (``a.csv.gz`` -> ``.csv``)."""
    return Path(name(path)).suffix


def logical(path: str | Path) -> Path:
    """``path`` with a trailing ``.gz`` removed."""
    p = Path(path)
    return p.with_name(name(p))


def open_text(path: str | Path, encoding: str = "utf-8") -> IO[str]:
    """``path`` (resolved as above) opened for reading text with ``newline=""`` (what the csv module wants)."""
    p = resolve(path)
    if p.name.endswith(GZ):
        return gzip.open(p, "rt", encoding=encoding, newline="")
    return open(p, encoding=encoding, newline="")  # noqa: SIM115 - the caller closes it (with ...)


def read_text(path: str | Path, encoding: str = "utf-8") -> str:
    """The text of ``path`` (resolved as above), decompressed when it is a ``.gz`` file."""
    p = resolve(path)
    if p.name.endswith(GZ):
        with gzip.open(p, "rt", encoding=encoding) as f:
            return f.read()
    return p.read_text(encoding=encoding)
