"""Small-M (decode) weight GEMMs as cuBLASLt runs them on the H100: a few CTAs, often split along K, plus a split-K
reduce kernel; not one kernel filling the device.

The selection (kernel, tile, CTA grid, split-K) is DATA: kernels/data/cublaslt_small_m.yaml, what torch.profiler
showed cuBLASLt launching per shape (torch 2.11 / CUDA 13; its heuristic is not public, so only the observed ranges
are covered). For a covered GEMM [M, K] x [K, N] the model emits
    the GEMM      one op with parallel_units = the grid's CTAs (one per SM: 164-213 KB of shared memory each) and
                  serial_iters = the K steps each CTA walks one after another (serial_steps: all of K for each
                  output tile it owns without split-K; its share of the (64-row tile, K step) work with it), priced by
                  hwmodels.roofline's wave model: max(weight stream at the device's bandwidth, steps x iter_us[kind])
                  + wave_fixed_us[kind] (the small-M kernels' own fixed time, not the full-device GEMMs' fixed_us).
                  iter_us / wave_fixed_us of gemm and gemm_fp8 (0.0885 / 0.0833 us per K step, 1.96 / 2.13 us) are
                  FITTED by simulator/calibration/fit_cublaslt_rule.py fit_chain on the three fresh campaigns, on the
                  in-graph price (every kernel's device time + one graph launch each, as a decode step's graph pays
                  it) against the campaigns' per-call CUDA-graph times, which hold the gaps between the kernels.
    the reduce    where split_k > 0: cuBLASLt's splitKreduce_kernel, kind elementwise, reading split_k fp32
                  partial outputs [M, N] and writing the bf16 result; in a graph it is priced at 2.2-2.5 us (its
                  elementwise device time + one launch), MEASURED at 1.9-3.0 us (its device time 1.6-2.4 us + the
                  0.62-0.67 us gap after its GEMM: production_kernels/gemm_graph_launch_nvidia-h100-80gb-hbm3_
                  2026-11-27.csv, lab/kernels/measure_gemm_graph_launch.py)
Shapes the table does not cover return None from `select`. `derive` is the STRUCTURAL fallback for them (the
table's `rule:` block, derived by simulator/calibration/fit_cublaslt_rule.py from observed kernel choices only):
    split-K      iff the K row (K x element bytes) exceeds rule.split_row_bytes AND the output tiles ceil(N / 64)
                 are fewer than rule.no_split_tiles[dtype][M bucket] (cuBLASLt runs large-N decode GEMMs unsplit:
                 enough tiles to fill the SMs), into split_count slices (the split kernels' cluster axis: 4 / 8)
    CTAs         split: min(max_ctas, ceil(weight bytes / bytes_per_cta)): cuBLASLt's split kernels hand every CTA
                 about the same weight bytes whatever N (a stream-K-like division of the (tile, K-step) work: Osama et
                 al., "Stream-K", PPoPP 2023; NVIDIA/cutlass include/cutlass/gemm/kernel/
                 sm90_tile_scheduler_stream_k.hpp @ f2fee24: a work unit's k_tile_count may span several output
                 tiles), the largest weights stopping at 72 CTAs; the split-K partials are added by a separate reduce
                 kernel as in CUTLASS's parallel split-K GEMM (include/cutlass/gemm/device/gemm_splitk_parallel.h @
                 86931fe). Unsplit: one CTA per 64-wide output tile up to rule.unsplit_max_ctas (132: the persistent
                 large-N kernels observed, grid 2 x 66)
M above rule.max_m (64) gets no selection: the caller keeps its full-device pricing. `plan` returns both, vectorized
over rows (and K, N arrays of vector combos), for the serving op model (simulator.layers.gemm / fp8_gemm), which uses
it only where `priced_on` holds: the device the table was observed on (H100-SXM) with its own fitted chain terms,
and only while the table's serving_op_model switch is on (off: the data file says why).
Checked blind on 156 real decode-layer shapes (production_kernels_*_fresh3.csv, the rule before the tile cut) and on
102 more (production_kernels_*_blind4.csv: Qwen2.5-14B / 32B, Llama-3.2-3B, Mistral-Nemo-12B; predicted before
measuring, benchmarks/calibration_accuracy.py).
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
#: one K step of cuBLASLt's nvjet small-M kernels: 128 bytes of K (64 bf16 / 128 fp8 elements: the names' 64x16 /
#: 128x16 = K tile x pipeline stages) of a 64-row weight tile (the names' 64xM tiles, weights along the 64)
K_TILE_BYTES = 128.0
W_TILE_ROWS = 64.0
#: the op kinds whose fitted chain terms the serving op model needs (priced_on)
CHAIN_KINDS = ("gemm", "gemm_fp8")


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


@lru_cache(maxsize=None)
def _rule(path: str = str(TABLE)) -> dict:
    doc = yaml.safe_load(Path(path).read_text())
    r = doc.get("rule")
    need = ("max_m", "m_small_max", "max_ctas", "split_row_bytes", "split_count", "bytes_per_cta", "no_split_tiles",
            "unsplit_max_ctas")
    if not isinstance(r, dict) or any(k not in r for k in need):
        raise SparsesimError(f"{path}: rule needs {', '.join(need)}")
    for key in ("split_count", "bytes_per_cta", "no_split_tiles"):
        for dt in ("bf16", "fp8"):
            if not isinstance(r[key].get(dt), dict) or {"small", "large"} - set(r[key][dt]):
                raise SparsesimError(f"{path}: rule.{key}.{dt} needs small and large")
    return r


def derive(dtype: str, m: float, k: float, n: float) -> Selection | None:
    """The structural rule's selection (module docstring) for [m, k] x [k, n], or None where M > rule.max_m."""
    c, s, ok = _derive_arrays(dtype, np.array([float(m)]), float(k), float(n))
    return Selection(kernel="rule", ctas=int(c[0]), split_k=int(s[0])) if ok[0] else None


def _derive_arrays(dtype: str, rows, k, n) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r = _rule()
    wb = 1.0 if dtype == "fp8" else 2.0
    rows = np.asarray(rows, dtype=np.float64)
    k = np.broadcast_to(np.asarray(k, dtype=np.float64), rows.shape)
    n = np.broadcast_to(np.asarray(n, dtype=np.float64), rows.shape)
    small = rows <= r["m_small_max"]
    bucket = lambda key: np.where(small, r[key][dtype]["small"], r[key][dtype]["large"])  # noqa: E731
    tiles = np.ceil(n / W_TILE_ROWS - 1e-9)
    splits = (k * wb > r["split_row_bytes"]) & (tiles < bucket("no_split_tiles"))
    split_ctas = np.clip(np.ceil(k * n * wb / bucket("bytes_per_cta") - 1e-9), 1.0, float(r["max_ctas"]))
    ctas = np.where(splits, split_ctas, np.clip(tiles, 1.0, float(r["unsplit_max_ctas"])))
    split = np.where(splits, bucket("split_count"), 0)
    ok = (rows >= 1) & (rows <= r["max_m"])
    return ctas, split.astype(np.float64), ok


def plan(dtype: str, rows, k, n, rule: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row (k, n scalars or arrays of rows' shape): (ctas, split_k, covered by a table entry, covered by the rule
    where no entry is). Rows neither covers (M > 64) get ctas 1, split 0 and both masks False; rule=False: table only."""
    rows = np.atleast_1d(np.asarray(rows, dtype=np.float64))
    kk = np.broadcast_to(np.asarray(k, dtype=np.float64), rows.shape)
    nn = np.broadcast_to(np.asarray(n, dtype=np.float64), rows.shape)
    ctas, split = np.ones(rows.shape), np.zeros(rows.shape)
    tab = np.zeros(rows.shape, bool)
    for e in _entries():
        if e["dtype"] != dtype:
            continue
        hit = (~tab & (rows >= e["m"][0]) & (rows <= e["m"][1]) & (kk >= e["k"][0]) & (kk <= e["k"][1])
               & (nn >= e["n"][0]) & (nn <= e["n"][1]))
        if not hit.any():
            continue
        y = np.ceil(nn / 128.0 * float(e["y_per_128n"]) - 1e-6)
        if e.get("y_max") is not None:
            y = np.minimum(y, int(e["y_max"]))
        ctas = np.where(hit, int(e["grid_x"]) * np.maximum(y, 1), ctas)
        split = np.where(hit, int(e["split_k"]), split)
        tab |= hit
    der = np.zeros(rows.shape, bool)
    if rule:
        c, s, ok = _derive_arrays(dtype, rows, kk, nn)
        der = ok & ~tab
        ctas, split = np.where(der, c, ctas), np.where(der, s, split)
    return ctas, split, tab, der


def serial_steps(split, ctas, k, n, wb: float) -> np.ndarray:
    """The K steps one CTA walks one after another (the chain of hwmodels.roofline's wave model): a K step loads a
    128-byte-deep slice of a 64-row weight tile (K_TILE_BYTES; the nvjet names' 64x16 / 128x16 = K tile x stages for
    bf16 / fp8). Without split-K every CTA walks all of K for each output tile it owns: ceil(tiles / CTAs) ceil(K /
    k_tile) steps (one tile each where the CTAs cover the tiles; the persistent unsplit kernels of large N hold 132
    CTAs for up to 448 tiles). With split-K cuBLASLt shares the (64-row tile, K step) work out over its CTAs (a
    stream-K-like division, module docstring): ceil(N / 64) ceil(K / k_tile) / CTAs steps each."""
    kt = K_TILE_BYTES / wb
    ks = np.ceil(np.asarray(k, dtype=np.float64) / kt)
    tiles = np.ceil(np.asarray(n, dtype=np.float64) / W_TILE_ROWS)
    c = np.maximum(np.asarray(ctas, dtype=np.float64), 1.0)
    return np.where(np.asarray(split) > 0, tiles * ks / c, np.maximum(np.ceil(tiles / c - 1e-9), 1.0) * ks)


def priced_on(hw) -> bool:
    """Whether `hw` is the device the selection table was observed on (its `device`: H100-SXM) with its own fitted
    terms carrying the small-M chain (cta_slots, iter_us and wave_fixed_us of both kinds gemm and gemm_fp8, fitted by
    simulator/calibration/fit_cublaslt_rule.py). Every other device (H200, B200, A100, H100-PCIe and the chips that
    borrow the H100-SXM's terms) keeps the full-device GEMM pricing: its cuBLASLt choices and per-step times were
    never measured. And nothing while the table's serving_op_model switch is off (serving_op_model())."""
    if not serving_op_model():
        return False   # the table's serving_op_model switch (off: the data file says why)
    if hw.name != _device() or not str(getattr(hw, "calibration", "")).startswith("fitted file"):
        return False   # another chip, or this one's terms borrowed by another: its cuBLASLt picks were never seen
    e = hw.efficiency
    return all(e.cta_slots.get(k, 0.0) > 0 and e.iter_s.get(k, 0.0) > 0 and k in e.wave_fixed_s for k in CHAIN_KINDS)


@lru_cache(maxsize=None)
def serving_op_model(path: str = str(TABLE)) -> bool:
    """The table's `serving_op_model` switch: whether the serving op model prices small-M GEMMs with it at all (off
    while the added split-K reduce kernels over-price measured graph decode steps; the data file says why)."""
    return bool(yaml.safe_load(Path(path).read_text()).get("serving_op_model", False))


@lru_cache(maxsize=None)
def _device(path: str = str(TABLE)) -> str:
    """The device the selection table and its rule were observed on (the table's `device`)."""
    return str(yaml.safe_load(Path(path).read_text()).get("device", ""))


def add_gemm(b, name: str, kind: str, dtype: str, rows, k, n, wb: float, ab: float, count,
             rule: bool = False) -> np.ndarray:
    """Emit a GEMM [rows, k] x [k, n] -> bf16 for the rows the table covers, and with rule=True also those the
    structural rule covers (module docstring): the GEMM with its CTAs, the split-K reduce where it splits, each only
    for the settings it covers (`where`). Returns the boolean mask of covered rows (the caller prices the others,
    where=~mask). kind:
    the op kind of the GEMM (gemm / gemm_fp8); wb / ab: weight / activation bytes per element."""
    shape = np.broadcast_shapes(np.shape(rows), np.shape(k), np.shape(n))
    r = np.broadcast_to(np.asarray(rows, dtype=np.float64), shape)
    k = np.broadcast_to(np.asarray(k, dtype=np.float64), shape)
    n = np.broadcast_to(np.asarray(n, dtype=np.float64), shape)
    ctas, split, tab, der = plan(dtype, r, k, n, rule=rule)
    ctas, split, tab, der = (np.reshape(x, shape) for x in (ctas, split, tab, der))
    cov = tab | der
    if not cov.any():
        return cov
    cnt = np.broadcast_to(np.asarray(count, dtype=np.float64), np.broadcast_shapes(shape, np.shape(count)))
    b.add(name, kind, flops=2.0 * r * k * n, bytes_read=k * n * wb + r * k * ab, bytes_written=r * n * ACT_BYTES,
          dtype=dtype, count=cnt, parallel_units=ctas, serial_iters=serial_steps(split, ctas, k, n, wb), where=cov)
    red = cov & (split > 0)
    if red.any():
        b.add(name + "_splitk_reduce", "elementwise", flops=split * r * n, bytes_read=split * r * n * 4.0,
              bytes_written=r * n * ACT_BYTES, dtype="fp32", count=cnt, where=red)
    return cov
