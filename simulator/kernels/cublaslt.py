"""Small-M (decode) weight GEMMs as cuBLASLt runs them on the H100: a few CTAs, often split along K, plus a split-K
reduce kernel; not one kernel filling the device.

The selection (kernel, tile, CTA grid, split-K) is DATA: kernels/data/cublaslt_small_m.yaml, what torch.profiler
showed cuBLASLt launching per shape (torch 2.11 / CUDA 13; its heuristic is not public, so only the observed ranges
are covered). For a covered GEMM [M, K] x [K, N] the model emits
    the GEMM      one op with parallel_units = the grid's CTAs: the roofline's fill_m = min(1, CTAs / (s U)) gives
                  each CTA a bandwidth of bw_hbm * eff_m / (s U) (s = saturation[kind], FITTED per kind by
                  simulator/calibration/fit_production_topk_gemm.py on the original campaign's GEMM fit rows, where
                  the table covers them), so a GEMM of 8-80 CTAs streams its weights at 8-80 CTAs' rate; fill_c does
                  the same for arithmetic (one CTA per SM)
    the reduce    where split_k > 0: cuBLASLt's splitKreduce_kernel, kind elementwise, reading split_k fp32
                  partial outputs [M, N] and writing the bf16 result
Shapes the table does not cover return None from `select` and the caller keeps its full-device pricing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import yaml

from hwmodels.errors import SparsesimError

TABLE = Path(__file__).parent / "data" / "cublaslt_small_m.yaml"
ACT_BYTES = 2.0


@dataclass(frozen=True)
class Selection:
    """One observed cuBLASLt choice: its kernel, CTAs and K split for a shape."""

    kernel: str
    ctas: int
    split_k: int


@lru_cache(maxsize=None)
def _entries(path: str = str(TABLE)) -> tuple[dict, ...]:
    doc = yaml.safe_load(Path(path).read_text())
    out = []
    for i, e in enumerate(doc.get("entries") or []):
        for key in ("dtype", "m", "k", "n", "split_k", "grid_x", "y_per_128n", "kernel"):
            if key not in e:
                raise SparsesimError(f"{path}: entries[{i}] lacks {key!r} (needs dtype, m, k, n, split_k, grid_x, "
                                     "y_per_128n, y_max, kernel)")
        if e["dtype"] not in ("fp8", "bf16"):
            raise SparsesimError(f"{path}: entries[{i}].dtype {e['dtype']!r}; allowed: fp8, bf16")
        out.append(e)
    return tuple(out)


def select(dtype: str, m: float, k: float, n: float) -> Selection | None:
    """The observed selection covering [m, k] x [k, n] in `dtype` ('fp8' per-tensor or 'bf16'), or None."""
    for e in _entries():
        if e["dtype"] != dtype:
            continue
        if not (e["m"][0] <= m <= e["m"][1] and e["k"][0] <= k <= e["k"][1] and e["n"][0] <= n <= e["n"][1]):
            continue
        y = math.ceil(n / 128.0 * float(e["y_per_128n"]) - 1e-6)
        if e.get("y_max") is not None:
            y = min(y, int(e["y_max"]))
        return Selection(kernel=str(e["kernel"]), ctas=int(e["grid_x"]) * max(y, 1), split_k=int(e["split_k"]))
    return None


def add_gemm(b, name: str, kind: str, dtype: str, rows, k: float, n: float, wb: float, ab: float, count) -> np.ndarray:
    """Emit a GEMM [rows, k] x [k, n] -> bf16 for the rows the table covers (module docstring): the GEMM with its CTAs,
    the split-K reduce where it splits. Returns the boolean mask of covered rows (the caller prices the others;
    covered rows get count 0 in the caller's op). kind: the op kind of the GEMM (gemm / gemm_fp8); wb / ab: weight /
    activation bytes per element."""
    r = np.atleast_1d(np.asarray(rows, dtype=np.float64))
    sel = [select(dtype, float(m), k, n) for m in r]
    cov = np.array([s is not None for s in sel])
    if not cov.any():
        return cov
    shape = np.shape(r)
    cnt = np.broadcast_to(np.asarray(count, dtype=np.float64), shape)
    ctas = np.array([s.ctas if s else 1 for s in sel], float)
    split = np.array([s.split_k if s else 0 for s in sel], float)
    b.add(name, kind, flops=2.0 * r * k * n, bytes_read=k * n * wb + r * k * ab, bytes_written=r * n * ACT_BYTES,
          dtype=dtype, count=np.where(cov, cnt, 0.0), parallel_units=ctas)
    red = cov & (split > 0)
    if red.any():
        b.add(name + "_splitk_reduce", "elementwise", flops=split * r * n, bytes_read=split * r * n * 4.0,
              bytes_written=r * n * ACT_BYTES, dtype="fp32", count=np.where(red, cnt, 0.0))
    return cov
