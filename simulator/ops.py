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
    l1_iters        optional: how many of those `serial_iters` load only what the same CTA read moments before and
                    still holds in its L1 (a row small enough to stay there, swept again); priced at the kind's L1
                    iteration time where the device has one (hwmodels.spec.Efficiency.iter_l1_s), else as the others
    resident_ctas   optional: CTAs of this kernel resident on one SM, where the kernel's own launch (its
                    registers / shared memory for this shape) sets it; 0 = the kind's calibrated occupancy
                    (hwmodels.spec.Efficiency.cta_slots). Only the kinds the roofline prices in waves read it
    cta_extra       optional: the share of the kind's per-CTA SM time (hwmodels.spec.Efficiency.cta_serial_s) this
                    shape's CTAs add on top of it, paid by every CTA on an SM's serial path, the first included
                    (work a compile-time tile size scales: the GMMA columns of a verification CTA); 0 = the kind's
                    calibrated per-CTA time alone. Only the kinds of hwmodels.roofline CTA_SERIAL_AFTER_FIRST read it
    cluster_ctas    optional: CTAs a thread-block cluster of the kernel's launch holds (0 = none declared). Read by the
                    custom all-reduce kinds (hwmodels.roofline AR_NORM_CS1 / AR_NORM_CSN: TensorRT-LLM's fused RMSNorm
                    syncs its cluster only with > 1 CTA)
    after_gemm      optional: > 0 where a custom all-reduce follows a GEMM on every rank (the layer model's
                    tensor-parallel all-reduce after a row-parallel GEMM): that GEMM's HBM bytes per rank (1 where
                    unknown); 0 = back to back / not declared. Read by the custom all-reduce kinds: the device's
                    engine_ar[after_gemm_s] and the rule after_gemm_share (the slowest rank's GEMM end, measured by
                    lab/kernels/measure_allreduce_in_step.py; simulator/calibration/allreduce_in_step.py)
    lone_tile_bytes optional: bytes of the first K/V tile each CTA waits for with nothing of its own to overlap the
                    load (a decode tile of FlashInfer's FA2 prefill kernel with an fp8 K/V cache); 0 = none declared.
                    Where the launch holds at most one CTA per SM in one wave, the roofline adds the CTAs' tile loads at
                    the kind's HBM rate (hwmodels.roofline LONE_TILE_LOAD)
    epilogue_bytes  optional: bytes each CTA stores after its main loop (a GEMM's output tile through TMA stores);
                    0 = none declared. The launch's last wave has nothing after it to overlap them: the roofline adds
                    the last wave's CTAs x epilogue_bytes at the L2's measured rate (hwmodels.roofline EPILOGUE_EXPOSED)
    setting         which priced setting (row of the results) the op belongs to

Many settings are priced at once: each `OpBuilder.add` call takes scalars or arrays with one entry per
setting and appends a block of rows, one per setting.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hwmodels.opkinds import DTYPE_CODE, DTYPES, KIND_CODE, KINDS


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
    l1_iters: np.ndarray | None = None
    resident_ctas: np.ndarray | None = None
    cta_extra: np.ndarray | None = None
    cluster_ctas: np.ndarray | None = None
    after_gemm: np.ndarray | None = None
    lone_tile_bytes: np.ndarray | None = None
    epilogue_bytes: np.ndarray | None = None

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
            "l1_iters": self.l1_iters if self.l1_iters is not None else 0.0,
            "resident_ctas": self.resident_ctas if self.resident_ctas is not None else 0.0,
            "cta_extra": self.cta_extra if self.cta_extra is not None else 0.0,
            "cluster_ctas": self.cluster_ctas if self.cluster_ctas is not None else 0.0,
            "after_gemm": self.after_gemm if self.after_gemm is not None else 0.0,
            "lone_tile_bytes": self.lone_tile_bytes if self.lone_tile_bytes is not None else 0.0,
            "epilogue_bytes": self.epilogue_bytes if self.epilogue_bytes is not None else 0.0,
        })

    def settings_subset(self, keep) -> "OpTable":
        """The ops of the settings where `keep` (bool, one per setting) holds, renumbered 0..k-1 in their order: a
        per-op price of the subset is the whole table's price of those ops (the roofline prices each op row on its
        own), so a fit that judges a few settings need not price the rest."""
        keep = np.asarray(keep, dtype=bool)
        sel = keep[self.setting]
        new_id = np.cumsum(keep) - 1
        cols = {c: getattr(self, c)[sel] for c in _REQUIRED}
        cols.update({c: (None if getattr(self, c) is None else getattr(self, c)[sel]) for c in _OPTIONAL})
        return OpTable(names=self.names, name_id=self.name_id[sel], kind=self.kind[sel], dtype=self.dtype[sel],
                       setting=new_id[self.setting[sel]], n_settings=int(keep.sum()), **cols)

    def distinct_rows(self) -> tuple["OpTable", np.ndarray]:
        """(the table's distinct op rows, every row's index among them): rows equal in every column but `setting` are
        one row, so a price of the distinct rows, indexed by the second, is the whole table's per-row price (the
        roofline prices each op row on its own). The rows keep their first setting (their settings are not summed
        here). Worth it where settings repeat ops: a drafter's forward, the same at every context of a decode grid."""
        cols = [self.name_id, self.kind, self.dtype] + [getattr(self, c) for c in _REQUIRED]
        cols += [getattr(self, c) for c in _OPTIONAL if getattr(self, c) is not None]
        bits = [np.ascontiguousarray(c, dtype=np.float64).view(np.uint64) for c in cols]
        h = np.zeros(len(self.kind), dtype=np.uint64)
        for b in bits:   # one 64-bit hash a row (wrapping arithmetic), then the rows grouped by it
            h = h * _ROW_HASH_MUL + (b ^ (b >> np.uint64(29)))
        _, first, inv = np.unique(h, return_index=True, return_inverse=True)
        inv = inv.ravel()
        if not all(np.array_equal(b[first][inv], b) for b in bits):   # a collision merged unequal rows: group by bytes
            m = np.ascontiguousarray(np.stack(bits, axis=1))
            _, first, inv = np.unique(m.view(np.dtype((np.void, m.shape[1] * 8))).ravel(), return_index=True,
                                      return_inverse=True)
        sub = {c: getattr(self, c)[first] for c in _REQUIRED}
        sub.update({c: (None if getattr(self, c) is None else getattr(self, c)[first]) for c in _OPTIONAL})
        return OpTable(names=self.names, name_id=self.name_id[first], kind=self.kind[first], dtype=self.dtype[first],
                       setting=self.setting[first], n_settings=self.n_settings, **sub), inv.ravel()

    def total(self, column: str) -> np.ndarray:
        """Per-setting sum of `column` times `count` (e.g. total bytes moved per step)."""
        col = getattr(self, column)
        if col is None:
            return np.zeros(self.n_settings)
        v = col * self.count
        return np.bincount(self.setting, weights=v, minlength=self.n_settings)


#: the odd 64-bit multiplier of distinct_rows' row hash (2^64 / the golden ratio): any odd constant groups the same
#: rows, since every group is checked against its first row
_ROW_HASH_MUL = np.uint64(0x9E3779B97F4A7C15)
_REQUIRED = ("flops", "bytes_read", "bytes_written", "parallel_units", "count", "devices")
_OPTIONAL = ("onchip_bytes", "spill_bytes", "reread_bytes", "working_set", "sync_steps", "serial_iters", "l1_iters",
             "resident_ctas", "cta_extra", "cluster_ctas", "after_gemm", "lone_tile_bytes", "epilogue_bytes")


class OpBuilder:
    """Accumulates blocks of op rows for `n` settings, then builds one OpTable.

    Scalar-lazy: a scalar argument stays a Python float until `build()`, which writes every column once
    into one preallocated array (no per-op `np.full`); an optional column (onchip_bytes ... resident_ctas)
    that no op set is left out of the table (None), which the roofline reads as all zeros."""

    def __init__(self, n_settings: int):
        self.n = int(n_settings)
        self._blocks: list[tuple] = []
        self._names: dict[str, int] = {}

    def _col(self, v):
        """A float (scalar) or a float64 array of shape (n,)."""
        if type(v) is float or type(v) is int:
            return float(v)
        a = np.asarray(v, dtype=np.float64)
        if a.ndim == 0:
            return float(a)
        if a.shape != (self.n,):
            raise ValueError(f"op column has shape {a.shape}, expected scalar or ({self.n},)")
        return a

    def add(self, name: str, kind: str, *, flops=0.0, bytes_read=0.0, bytes_written=0.0,
            parallel_units=0.0, dtype: str = "bf16", count=1.0, devices=1.0, where=None,
            onchip_bytes=0.0, spill_bytes=0.0, reread_bytes=0.0, working_set=0.0, sync_steps=0.0,
            serial_iters=0.0, l1_iters=0.0, resident_ctas=0.0, cta_extra=0.0, cluster_ctas=0.0,
            after_gemm=0.0, lone_tile_bytes=0.0, epilogue_bytes=0.0) -> None:
        """Append one op for every setting (or for the settings where `where` is True).

        Numeric arguments are scalars or arrays with one value per setting.
        """
        if kind not in KIND_CODE:
            raise ValueError(f"unknown op kind {kind!r}; allowed: {KINDS}")
        if dtype not in DTYPE_CODE:
            raise ValueError(f"unknown dtype {dtype!r}; allowed: {DTYPES}")
        col = self._col
        req = (col(flops), col(bytes_read), col(bytes_written), col(parallel_units), col(count), col(devices))
        opt = (onchip_bytes, spill_bytes, reread_bytes, working_set, sync_steps, serial_iters, l1_iters,
               resident_ctas, cta_extra, cluster_ctas, after_gemm, lone_tile_bytes, epilogue_bytes)
        if all(type(c) is float and c == 0.0 for c in opt):
            opt = None
        else:
            opt = tuple(col(c) for c in opt)
            if all(type(c) is float and c == 0.0 for c in opt):
                opt = None
        idx = None
        if where is not None:
            mask = np.broadcast_to(np.asarray(where, dtype=bool), (self.n,))
            if not mask.any():
                return
            if not mask.all():
                idx = np.flatnonzero(mask)
                req = tuple(c if type(c) is float else c[idx] for c in req)
                if opt is not None:
                    opt = tuple(c if type(c) is float else c[idx] for c in opt)
        nid = self._names.setdefault(name, len(self._names))
        self._blocks.append((nid, KIND_CODE[kind], DTYPE_CODE[dtype], req, opt, idx))

    def build(self) -> OpTable:
        if not self._blocks:
            raise ValueError("no ops were added")
        names = [None] * len(self._names)
        for k, v in self._names.items():
            names[v] = k
        return _table([(b, 0, self.n) for b in self._blocks], self.n, names)


def _table(items: list[tuple], n_settings: int, names: list[str]) -> OpTable:
    """An OpTable of blocks `items` = [(block, setting offset, settings of its builder)], rows in that order."""
    sizes = [n if b[5] is None else len(b[5]) for b, _, n in items]
    total = sum(sizes)
    starts = np.cumsum([0] + sizes[:-1]).tolist()

    def column(pieces) -> np.ndarray:
        out = np.empty(total)
        for s, size, v in zip(starts, sizes, pieces):
            out[s:s + size] = v
        return out

    cols = {c: column([it[0][3][i] for it in items]) for i, c in enumerate(_REQUIRED)}
    if any(it[0][4] is not None for it in items):
        for i, c in enumerate(_OPTIONAL):
            pieces = [0.0 if it[0][4] is None else it[0][4][i] for it in items]
            if any(type(v) is not float or v != 0.0 for v in pieces):
                cols[c] = column(pieces)
    setting = np.empty(total, dtype=np.int64)
    ranges: dict[tuple, np.ndarray] = {}
    for s, size, (b, off, n) in zip(starts, sizes, items):
        if b[5] is None:
            r = ranges.get((off, n))
            if r is None:
                r = ranges[(off, n)] = np.arange(off, off + n, dtype=np.int64)
            setting[s:s + size] = r
        else:
            setting[s:s + size] = b[5] + off if off else b[5]
    return OpTable(
        names=names,
        name_id=np.repeat(np.array([it[0][0] for it in items], dtype=np.int32), sizes),
        kind=np.repeat(np.array([it[0][1] for it in items], dtype=np.int8), sizes),
        dtype=np.repeat(np.array([it[0][2] for it in items], dtype=np.int8), sizes),
        setting=setting,
        n_settings=n_settings,
        **cols,
    )


def row_tables(builders: list[OpBuilder], max_rows: int):
    """The op rows of several builders, their settings numbered one after the other (builder i's settings
    are offset by the settings of the builders before it), as a sequence of small OpTables of at most about
    `max_rows` rows (a single op block may exceed it), in order: builder by builder, block by block. Each
    setting's rows come in the order its own builder's table would hold them, so per-setting sums
    accumulated over the pieces in order (np.add.at) equal np.bincount over the whole table bit for bit.
    The pieces carry no op names (name_id is the builder's own numbering)."""
    n_total = sum(b.n for b in builders)
    items: list[tuple] = []
    rows = 0
    off = 0
    for bld in builders:
        for blk in bld._blocks:
            size = bld.n if blk[5] is None else len(blk[5])
            if items and rows + size > max_rows:
                yield _table(items, n_total, [])
                items, rows = [], 0
            items.append((blk, off, bld.n))
            rows += size
        off += bld.n
    if items:
        yield _table(items, n_total, [])


def concat_tables(tables: list[OpTable]) -> tuple[OpTable, np.ndarray]:
    """One OpTable holding the settings of several tables one after the other (table i's settings are
    offset by the settings of the tables before it). Returns the table and each table's setting offset.
    Rows keep their order inside each table, so per-setting sums (np.bincount) add in the same order."""
    if len(tables) == 1:
        return tables[0], np.zeros(1, dtype=np.int64)
    offsets = np.cumsum([0] + [t.n_settings for t in tables[:-1]])
    names: dict[str, int] = {}
    name_ids = []
    for t in tables:
        remap = np.array([names.setdefault(nm, len(names)) for nm in t.names], dtype=np.int32)
        name_ids.append(remap[t.name_id])
    cols = {}
    for c in _REQUIRED:
        cols[c] = np.concatenate([getattr(t, c) for t in tables])
    for c in _OPTIONAL:
        if any(getattr(t, c) is not None for t in tables):
            cols[c] = np.concatenate([getattr(t, c) if getattr(t, c) is not None else np.zeros(len(t))
                                      for t in tables])
    name_list = [None] * len(names)
    for k, v in names.items():
        name_list[v] = k
    return OpTable(
        names=name_list,
        name_id=np.concatenate(name_ids),
        kind=np.concatenate([t.kind for t in tables]),
        dtype=np.concatenate([t.dtype for t in tables]),
        setting=np.concatenate([t.setting + o for t, o in zip(tables, offsets)]),
        n_settings=int(sum(t.n_settings for t in tables)),
        **cols,
    ), offsets


class ScopedBuilder:
    """Adds ops to another builder under a name prefix and with counts multiplied by `count_factor`
    (e.g. 'draft.' ops of a draft model run K times per round)."""

    def __init__(self, inner: "OpBuilder | ScopedBuilder", prefix: str, count_factor: float = 1.0):
        self.inner, self.prefix, self.count_factor = inner, prefix, float(count_factor)
        self.n = inner.n

    def add(self, name: str, kind: str, *, count=1.0, **kw) -> None:
        self.inner.add(self.prefix + name, kind, count=np.asarray(count, dtype=np.float64) * self.count_factor, **kw)


class MaskedBuilder:
    """Adds ops to another builder only for the settings where `mask` is True (an op's own `where` is
    combined with it): lets one code path price a subset of the settings, e.g. the rows one kernel family
    or dispatch rule applies to."""

    def __init__(self, inner: "OpBuilder | ScopedBuilder | MaskedBuilder", mask):
        self.inner, self.mask, self.n = inner, np.asarray(mask, dtype=bool), inner.n

    def add(self, name: str, kind: str, *, where=None, **kw) -> None:
        w = self.mask if where is None else self.mask & np.broadcast_to(np.asarray(where, dtype=bool), self.mask.shape)
        self.inner.add(name, kind, where=w, **kw)
