"""A memo of the prefill schedules' emulated makespans, kept by a caller that prices the same launches again.

The causal prefill families emulate their CTA schedule once per distinct launch (simulator.kernels.production:
`_lpt_ratio`, FlashAttention-3's longest-first persistent scheduler; `_inorder_ratio`, FlashInfer's in-order
dispatch). Within one pricing call the distinct launches are found by `unique_rows`; across calls nothing is shared.
The engine's chunk surface (simulator.engine.step_cost.ChunkSurface) prices one cached-prefix column at a time, and
neighbouring columns emulate the same launches (the emulation runs at the prefix's ladder points,
production.prefix_ladder_step, which many columns share): without a memo a column costs ~0.3 s, with it ~0.03 s
(Llama-3.1-70B, FlashAttention-3, TP8 on the H200).

A memo is active only inside `with active(memo):`, so every other caller (tests that switch the emulation's module
constants, the calibration report) emulates as before. A key is the launch's whole row of the emulation's inputs plus
the group size the emulation hands jobs out in (the only module constant it reads), so a value is the one the
emulation would return for that launch in any call. For the same reason threads that price at once (a sweep's threads)
may read and fill each other's memos through the shared stack: every value any memo holds is exact for its key.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

_ACTIVE: list = []


class EmulationMemo:
    """Values of emulated launches by (emulation name, key row). `max_entries`: the memo is emptied when it would grow
    past it (ASSUMPTION: 10^6 entries, ~130 MB of keys, is more than one model's chunk surface emulates: a
    Llama-3.1-70B TP8 FlashAttention-3 surface emulates ~0.63 M launches)."""

    def __init__(self, max_entries: int = 1_000_000):
        self.max_entries = int(max_entries)
        self.tables: dict[str, dict[bytes, float]] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return sum(len(t) for t in self.tables.values())

    def lookup(self, name: str, keys: np.ndarray, emulate) -> np.ndarray:
        """emulate(key rows) -> one value per row, called on the rows the memo does not hold; every row's value."""
        keys = np.ascontiguousarray(keys, dtype=np.float64)
        codes = keys.view(np.dtype((np.void, keys.shape[1] * 8))).ravel().tolist()
        table = self.tables.setdefault(name, {})
        get = table.get
        out = np.array([get(c, np.nan) for c in codes], dtype=np.float64)   # an emulated value is never nan
        miss = np.isnan(out)
        n_miss = int(miss.sum())
        self.hits += len(codes) - n_miss
        self.misses += n_miss
        if n_miss:
            idx = np.flatnonzero(miss)
            vals = np.asarray(emulate(keys[idx]), dtype=np.float64)
            out[idx] = vals
            if len(self) + n_miss > self.max_entries:
                self.tables.clear()
                table = self.tables.setdefault(name, {})
            table.update(zip((codes[i] for i in idx.tolist()), vals.tolist()))
        return out


@contextmanager
def active(memo: EmulationMemo):
    """Emulations inside the block read and fill `memo`."""
    _ACTIVE.append(memo)
    try:
        yield memo
    finally:
        _ACTIVE.pop()


def memoized(name: str, keys: np.ndarray, emulate) -> np.ndarray:
    """emulate(keys) through the active memo, if there is one."""
    if not _ACTIVE:
        return np.asarray(emulate(keys), dtype=np.float64)
    return _ACTIVE[-1].lookup(name, keys, emulate)
