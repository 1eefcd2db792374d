"""What the commands share: usage errors, and output folders checked before any work is done."""
from __future__ import annotations

import os
from pathlib import Path

from hwmodels.errors import SparsesimError

MANIFEST = ".sparsesim-outputs"


class UsageError(SparsesimError):
    """The command line itself is wrong (missing argument, unknown action)."""


def add_out_argument(parser, default_root: str = "results") -> None:
    parser.add_argument("--out", metavar="DIR",
                        help=f"output root: files go to DIR/<scenario name>/ (default {default_root}/<scenario name>/)")


class OutputDir:
    """The folder a command writes into, checked before any pricing.

    `OutputDir.prepare(root, name)` creates `root/name`, fails with one line if it is a file, cannot be
    created or cannot be written, and remembers what an earlier run wrote there (a manifest file). Each
    written file is announced with `wrote(path)`; `finish()` deletes the files the earlier run wrote that
    this run did not (a stale breakdown.csv beside a new results.csv would silently mix two runs) and
    returns the lines that say so."""

    def __init__(self, path: Path):
        self.path = path
        self.written: list[str] = []
        self._previous: list[str] = []

    @classmethod
    def prepare(cls, root: str | None, name: str, default_root: str = "results") -> "OutputDir":
        base = Path(root) if root else Path(default_root)
        if base.exists() and not base.is_dir():
            raise SparsesimError("is a file, not a folder; --out needs a folder", file=str(base))
        path = base / name
        if path.exists() and not path.is_dir():
            raise SparsesimError("exists as a file; the outputs need a folder of that name (remove it or give "
                                 "another --out)", file=str(path))
        try:
            path.mkdir(parents=True, exist_ok=True)
            probe = path / f".sparsesim-write-test-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except PermissionError:
            raise SparsesimError("cannot be written (permission denied); give a writable --out", file=str(path)) from None
        except OSError as e:
            raise SparsesimError(f"cannot be created or written ({e.strerror or e}); give another --out",
                                 file=str(path)) from None
        out = cls(path)
        m = path / MANIFEST
        if m.is_file():
            try:
                out._previous = [x for x in m.read_text().splitlines() if x and "/" not in x and x != MANIFEST]
            except (OSError, UnicodeDecodeError):
                out._previous = []
        return out

    def file(self, name: str) -> Path:
        """The path of an output file; announce it as written."""
        if name not in self.written:
            self.written.append(name)
        return self.path / name

    def finish(self) -> list[str]:
        """Remove what an earlier run wrote and this one did not; write the manifest. Returns notes."""
        notes = []
        for name in self._previous:
            if name not in self.written:
                p = self.path / name
                if p.is_file():
                    p.unlink()
                    notes.append(f"removed {p} (written by an earlier run, not by this one)")
        try:
            (self.path / MANIFEST).write_text("\n".join(self.written) + "\n")
        except OSError:
            pass
        return notes
