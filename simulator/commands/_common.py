"""What the commands share: usage errors, and output folders checked before any work is done."""
from __future__ import annotations

import os
from pathlib import Path

from hwmodels.errors import SparsesimError

MANIFEST = ".sparsesim-outputs"

#: exit statuses of every command (documented in `sparsesim --help`)
OK = 0
BAD_INPUT = 2          # a SparsesimError: a file, a field, a flag; one line on stderr
NOTHING_FITS = 3       # the input is valid but nothing fits / nothing could be priced / no request finished
EXIT_STATUS_HELP = ("exit status: 0 ok; 2 bad input (one line naming the file and field, no traceback); "
                    "3 nothing fits (every setting skipped or out of memory, no plan candidate meets the SLO or the "
                    "budget, no simulated request finished); 130 interrupted")


class UsageError(SparsesimError):
    """The command line itself is wrong (missing argument, unknown action)."""


def add_out_argument(parser, default_root: str = "results") -> None:
    parser.add_argument("--out", metavar="DIR",
                        help=f"output root: files go to DIR/<scenario name>/ (default {default_root}/<scenario name>/)")


def installed_package(path: Path) -> Path | None:
    """The installed-package folder (a site-packages or dist-packages entry) that `path` lies in, or None.
    Links are resolved first, so a link pointing into an installed package is caught too."""
    p = Path(path).resolve()
    parts = p.parts
    for i, part in enumerate(parts):
        if part in ("site-packages", "dist-packages"):
            return Path(*parts[:i + 2]) if i + 1 < len(parts) else Path(*parts[:i + 1])
    return None


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
        path = base / name
        try:
            inside = installed_package(path)
            if inside is not None:
                raise SparsesimError(f"is inside the installed Python package {inside}; outputs never go there (the next "
                                     "install or uninstall would delete them): give another --out", file=str(path))
            if base.exists() and not base.is_dir():
                raise SparsesimError("is a file, not a folder; --out needs a folder", file=str(base))
            if path.exists() and not path.is_dir():
                raise SparsesimError("exists as a file; the outputs need a folder of that name (remove it or give "
                                     "another --out)", file=str(path))
        except OSError as e:   # a name longer than the file system allows, a loop of links, ...
            raise SparsesimError(f"cannot be used as an output folder ({e.strerror or e}); give another --out",
                                 file=str(path)) from None
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


def calibration_lines(hardware) -> list[str]:
    """The calibration each device of `hardware` (HardwareSpecs) is priced with, one line each, for a command's
    output; a device running uncalibrated (no fitted file of its name, no calibration_from) also gets a warning
    on stderr naming its spec file: a renamed copy of a calibrated spec would otherwise price ~20 % faster
    without a word."""
    import sys

    out = []
    for hw in {h.file: h for h in hardware}.values():
        out.append(f"calibration: {hw.name}: {hw.calibration_text()}")
        if not hw.calibrated:
            print(f"sparsesim: warning: {hw.file}: hardware {hw.name!r} runs uncalibrated (efficiencies 1.0, datasheet "
                  f"peaks): no fitted file {hw.name}.yaml; add `calibration_from: <a calibrated device>` to the spec or "
                  "fit it (`sparsesim calibrate fit`)", file=sys.stderr)
    return out
