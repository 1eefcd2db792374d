"""The one YAML reader of sparsesim: specs, models, fitted files, scenarios, paper values, trace metadata.

It turns every way a user's file can be unreadable into one `SparsesimError` line that names the file:
missing, a directory, no permission, not UTF-8, too large, malformed YAML (with line and column), nested
too deeply, duplicate keys, or a document that expands beyond `MAX_NODES` values through aliases (a "YAML
alias bomb": a few hundred bytes that unfold into billions of strings). Parsing uses libyaml's C parser
when PyYAML was built with it (`yaml.CSafeLoader`, ~6x faster than the pure-Python parser on our spec
files); the constructors stay PyYAML's safe ones, so only plain data (mappings, lists, scalars) comes back.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from hwmodels.errors import SparsesimError

#: Largest YAML file read (bytes). Our biggest shipped file is ~20 KB; a scenario or spec of 8 MiB is a
#: mistake (a data file passed where a YAML file was expected), not a document.
MAX_BYTES = 8 * 2**20
#: Largest number of values a document may expand to, counting each use of an alias again. A real
#: scenario has a few hundred; 200,000 leaves room for generated grids and stops alias bombs early.
MAX_NODES = 200_000
#: Deepest nesting accepted (PyYAML recurses per level; Python's own limit would end in a traceback).
MAX_DEPTH = 64

_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
HAVE_LIBYAML = _BASE is not yaml.SafeLoader


class _Loader(_BASE):  # type: ignore[misc, valid-type]
    """Safe loader that refuses duplicate mapping keys (PyYAML silently keeps the last one)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                dup = key in seen
            except TypeError:  # unhashable key: let the base constructor report it
                dup = False
            if dup:
                mark = key_node.start_mark
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (line {mark.line + 1})", mark)
            try:
                seen.add(key)
            except TypeError:
                pass
        return super().construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _Loader.construct_mapping)


def _depth_ok(text: str) -> bool:
    """Cheap pre-check for flow-style nesting deeper than MAX_DEPTH ('[[[[...' in one value)."""
    depth = best = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            if depth > best:
                best = depth
                if best > MAX_DEPTH:
                    return False
        elif ch in "]}":
            depth = max(0, depth - 1)
    return True


def _count_nodes(doc: Any, file: str) -> None:
    """Walk the parsed document, counting every value as often as it is reachable (aliases count again)."""
    budget = MAX_NODES
    stack = [(doc, 0)]
    while stack:
        node, depth = stack.pop()
        budget -= 1
        if budget < 0:
            raise SparsesimError(f"expands to more than {MAX_NODES:,} values (repeated YAML aliases?); "
                                 "a scenario, spec or model file is far smaller", file=file)
        if depth > MAX_DEPTH:
            raise SparsesimError(f"is nested more than {MAX_DEPTH} levels deep", file=file)
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
            stack.extend((k, depth + 1) for k in node.keys())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def read_bytes(path: str | Path, what: str = "file", max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of `path`, or a SparsesimError naming the file: missing, a directory, unreadable, or larger
    than `max_bytes`. The cap is on what is actually read (at most max_bytes + 1 bytes), never on the size the
    file system reports: a device or a pipe (/dev/zero, /dev/urandom, a process substitution) reports 0 and
    would otherwise be read until memory runs out."""
    p = Path(path)
    f = str(p)
    try:
        if p.is_dir():
            raise SparsesimError(f"is a directory, not a {what}", file=f)
        with open(p, "rb") as fh:
            raw = fh.read(max_bytes + 1)
    except FileNotFoundError:
        raise SparsesimError(f"no such {what}", file=f) from None
    except PermissionError:
        raise SparsesimError(f"cannot be read (permission denied); the {what} must be readable", file=f) from None
    except OSError as e:
        raise SparsesimError(f"cannot be read ({e.strerror or e})", file=f) from None
    if len(raw) > max_bytes:
        raise SparsesimError(f"holds more than {max_bytes:,} bytes (read stopped there); a {what} is at most "
                             f"{max_bytes:,} bytes (a device file or a data file given by mistake?)", file=f)
    return raw


def decode_utf8(raw: bytes, file: str, what: str = "file") -> str:
    """`raw` as UTF-8 text, or a SparsesimError naming the file and the line of the first bad byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise SparsesimError(f"is not UTF-8 text (byte 0x{raw[e.start]:02x} at line {line}); the {what} must "
                             "be UTF-8 text", file=file) from None


def read_text(path: str | Path, what: str = "file", max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of `path` (read_bytes: at most max_bytes), or a SparsesimError naming the file and what is
    wrong with it."""
    return decode_utf8(read_bytes(path, what, max_bytes), str(path), what)


def parse_yaml(text: str, file: str) -> Any:
    """Parse YAML text with the safe loader; any problem becomes one SparsesimError line naming `file`."""
    if "\x00" in text:
        raise SparsesimError("contains NUL bytes: it is a binary file, not YAML", file=file)
    if not _depth_ok(text):
        raise SparsesimError(f"is nested more than {MAX_DEPTH} levels deep", file=file)
    try:
        doc = yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader subclass
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        what = " ".join(str(e.problem or e.context or "malformed").split())
        raise SparsesimError(f"is not valid YAML: {where}{what}", file=file) from None
    except yaml.YAMLError as e:
        raise SparsesimError(f"is not valid YAML: {' '.join(str(e).split())}", file=file) from None
    except RecursionError:
        raise SparsesimError(f"is nested more than {MAX_DEPTH} levels deep", file=file) from None
    _count_nodes(doc, file)
    return doc


def load_yaml(path: str | Path, what: str = "YAML file") -> Any:
    """Read and parse a YAML file (see module docstring for what is refused)."""
    return parse_yaml(read_text(path, what), str(path))


def named_file(name_or_path: str | Path, folder: Path, what: str) -> Path:
    """Resolve a shipped name ('H100-SXM' -> folder/H100-SXM.yaml) or a path to a YAML file.

    `what` is the kind of thing in the error message ('hardware', 'model'); the message lists the shipped
    names. A name containing a path separator or ending in .yaml/.yml is always taken as a path."""
    if not isinstance(name_or_path, (str, Path)) or not str(name_or_path).strip():
        raise SparsesimError(f"a {what} name or path must be a non-empty string, got {name_or_path!r}")
    p = Path(name_or_path)
    as_path = p.suffix in (".yaml", ".yml") or "/" in str(name_or_path) or p.exists()
    if as_path:
        return p
    path = folder / f"{name_or_path}.yaml"
    if not path.exists():
        known = ", ".join(sorted(x.stem for x in folder.glob("*.yaml")))
        raise SparsesimError(f"unknown {what} {str(name_or_path)!r}; known: {known} "
                             f"(or give a path to a {what} YAML file)")
    return path


def file_stamp(path: Path):
    """A cache key part that changes when the file does (modification time), None if unreadable."""
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None
