"""The Op table: the one contract between strategies (what work a step does) and hardware (what it costs).

One row is one kernel (or fused kernel), repeated `count` times in sequence (e.g. once per layer):
    name            what it is ('qkv_proj', 'attention', ...), stored as an index into `names`
    kind            gemm | attention | gather | topk | elementwise | collective | copy  (hwmodels.opkinds)
    flops           floating-point operations of one kernel (a multiply-add is 2)
    bytes_read      bytes one kernel must read from device memory (each input once);
                    for a collective: the message size per device
    bytes_written   bytes one kernel must write to device memory
    parallel_units  CTAs (thread blocks) or equivalent independent work items; 0 = the library fills
                    the device whatever the shape
    dtype           dtype of the arithmetic (hwmodels.opkinds.DTYPES)
    count           how many times the kernel runs per step (layers, passes)
    devices         devices taking part (collectives); 1 otherwise
    onchip_bytes    optional: on-chip (shared-memory) working set one parallel unit needs resident; 0 = not
                    declared. The roofline compares it with the device's shared memory per unit: a unit
                    whose working set does not fit runs in passes = ceil(onchip_bytes / smem_per_unit)
    spill_bytes     optional: extra device-memory bytes the whole kernel re-reads for each pass beyond the
                    first (what a spill costs); 0 = nothing is re-read
    reread_bytes    optional: part of bytes_read that re-reads data the same kernel already read (later
                    passes of a multi-pass top-k, ...): served by L2 when `working_set` fits in it
    working_set     optional: bytes those re-reads cycle through (0 = no re-reads)
    sync_steps      optional: block- or grid-wide synchronized phases inside one kernel (the passes of a
                    single-block radix select, ...); each costs the device's sync latency for the kind
    serial_iters    optional: iterations of a synchronous load-then-compute loop on the kernel's critical
                    path (per CTA): each waits for its loads to return before the next is issued, so the
                    kernel cannot finish before serial_iters x the device's measured loop-iteration time
                    (hwmodels.spec.Efficiency.loop_iter_s), whatever its bytes. MMHA-derived decode
                    kernels that give a whole sequence to one CTA (LServe's page selector) are bound by it
    setting         which priced setting (row of the results) the op belongs to

Many settings are priced at once: each `OpBuilder.add` call takes scalars or arrays with one entry per
setting and appends a block of rows, one per setting.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hwmodels.opkinds import DTYPE_CODE, KIND_CODE, KINDS, DTYPES

_FLOAT_COLUMNS = ("flops", "bytes_read", "bytes_written", "parallel_units", "count", "devices", "onchip_bytes",
                  "spill_bytes", "reread_bytes", "working_set", "sync_steps", "serial_iters")


@dataclass
class OpTable:
    """Columns of op rows (see module docstring). `names[name_id]` is a row's op name."""

    names: list[str]
    name_id: np.ndarray
    kind: np.ndarray
    dtype: np.ndarray
    flops: np.ndarray
    bytes_read: np.ndarray
    bytes_written: np.ndarray
    parallel_units: np.ndarray
    count: np.ndarray
    devices: np.ndarray
    setting: np.ndarray
    n_settings: int
    onchip_bytes: np.ndarray | None = None  # see module docstring (None = no op declared a footprint)
    spill_bytes: np.ndarray | None = None
    reread_bytes: np.ndarray | None = None
    working_set: np.ndarray | None = None
    sync_steps: np.ndarray | None = None
    serial_iters: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.kind)

    def to_frame(self):
        """The table as a pandas DataFrame with readable names (for inspection and tests)."""
        import pandas as pd

        return pd.DataFrame({
            "setting": self.setting,
            "name": np.asarray(self.names, dtype=object)[self.name_id],
            "kind": np.asarray(KINDS, dtype=object)[self.kind],
            "dtype": np.asarray(DTYPES, dtype=object)[self.dtype],
            "flops": self.flops,
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "parallel_units": self.parallel_units,
            "count": self.count,
            "devices": self.devices,
            "onchip_bytes": self.onchip_bytes if self.onchip_bytes is not None else 0.0,
            "spill_bytes": self.spill_bytes if self.spill_bytes is not None else 0.0,
            "reread_bytes": self.reread_bytes if self.reread_bytes is not None else 0.0,
            "working_set": self.working_set if self.working_set is not None else 0.0,
            "sync_steps": self.sync_steps if self.sync_steps is not None else 0.0,
            "serial_iters": self.serial_iters if self.serial_iters is not None else 0.0,
        })

    def total(self, column: str) -> np.ndarray:
        """Per-setting sum of `column` times `count` (e.g. total bytes moved per step)."""
        v = getattr(self, column) * self.count
        return np.bincount(self.setting, weights=v, minlength=self.n_settings)


class OpBuilder:
    """Accumulates blocks of op rows for `n` settings, then builds one OpTable."""

    def __init__(self, n_settings: int):
        self.n = int(n_settings)
        self._blocks: list[tuple] = []
        self._names: dict[str, int] = {}

    def _col(self, v) -> np.ndarray:
        a = np.asarray(v, dtype=np.float64)
        if a.ndim == 0:
            return np.full(self.n, float(a))
        if a.shape != (self.n,):
            raise ValueError(f"op column has shape {a.shape}, expected scalar or ({self.n},)")
        return a

    def add(self, name: str, kind: str, *, flops=0.0, bytes_read=0.0, bytes_written=0.0,
            parallel_units=0.0, dtype: str = "bf16", count=1.0, devices=1.0, where=None,
            onchip_bytes=0.0, spill_bytes=0.0, reread_bytes=0.0, working_set=0.0, sync_steps=0.0,
            serial_iters=0.0) -> None:
        """Append one op for every setting (or for the settings where `where` is True).

        Numeric arguments are scalars or arrays with one value per setting.
        """
        if kind not in KIND_CODE:
            raise ValueError(f"unknown op kind {kind!r}; allowed: {KINDS}")
        if dtype not in DTYPE_CODE:
            raise ValueError(f"unknown dtype {dtype!r}; allowed: {DTYPES}")
        nid = self._names.setdefault(name, len(self._names))
        cols = [self._col(c) for c in (flops, bytes_read, bytes_written, parallel_units, count, devices,
                                       onchip_bytes, spill_bytes, reread_bytes, working_set, sync_steps,
                                       serial_iters)]
        idx = np.arange(self.n)
        if where is not None:
            mask = np.broadcast_to(np.asarray(where, dtype=bool), (self.n,))
            if not mask.any():
                return
            idx = idx[mask]
            cols = [c[mask] for c in cols]
        self._blocks.append((nid, KIND_CODE[kind], DTYPE_CODE[dtype], cols, idx))

    def build(self) -> OpTable:
        if not self._blocks:
            raise ValueError("no ops were added")
        sizes = [len(b[4]) for b in self._blocks]
        cols = {c: np.concatenate([b[3][i] for b in self._blocks]) for i, c in enumerate(_FLOAT_COLUMNS)}
        names = [None] * len(self._names)
        for k, v in self._names.items():
            names[v] = k
        return OpTable(
            names=names,
            name_id=np.repeat(np.array([b[0] for b in self._blocks], dtype=np.int32), sizes),
            kind=np.repeat(np.array([b[1] for b in self._blocks], dtype=np.int8), sizes),
            dtype=np.repeat(np.array([b[2] for b in self._blocks], dtype=np.int8), sizes),
            setting=np.concatenate([b[4] for b in self._blocks]),
            n_settings=self.n,
            **cols,
        )


class ScopedBuilder:
    """Adds ops to another builder under a name prefix and with counts multiplied by `count_factor`
    (e.g. 'draft.' ops of a draft model run K times per round)."""

    def __init__(self, inner: "OpBuilder | ScopedBuilder", prefix: str, count_factor: float = 1.0):
        self.inner, self.prefix, self.count_factor = inner, prefix, float(count_factor)
        self.n = inner.n

    def add(self, name: str, kind: str, *, count=1.0, **kw) -> None:
        self.inner.add(self.prefix + name, kind, count=np.asarray(count, dtype=np.float64) * self.count_factor, **kw)
