"""Fit the roofline's efficiency parameters to kernels measured on a GPU, and prove them on held-out shapes.

Input: a CSV written by measure.py. Every measured kernel is turned into the Op rows the simulator itself
would emit for it (the same accounting: GEMMs as simulator.layers.gemm, decode attention through the
`dense` attention strategy, ...), priced by hwmodels.roofline with candidate parameters, and compared
with the measured median. Parameters are fitted per family with scipy.optimize.least_squares on the log
of predicted / measured time (relative error), on the fit part of the data only:

  family       op kind       parameters (physical meaning)
  copy         copy          memory[copy] (achieved / peak bandwidth), fixed_us[copy] (ramp/tail)
  gemm         gemm          memory[gemm], compute[gemm], compute_dtype[fp8], fixed_us[gemm]
  decode_attn  attention     memory[attention], compute[attention], fixed_us[attention],
                             saturation[attention] (units needed to reach full bandwidth / SMs);
                             fitted on one-query-row decode (cuDNN SDPA); rows with several query
                             rows (verification) are predicted, not fitted
  paged_attn   gather        memory[gather], fixed_us[gather]   (the attention part reuses the above)
  topk         topk          memory[topk] (= 1 / effective full-row passes), fixed_us[topk]
  elementwise  elementwise   memory[elementwise], fixed_us[elementwise]
  launch       -             launch_us graph / eager: taken directly from the measurement

Held out from every fit, then predicted (whole shape families, never random rows):
  reduce (read-only sum: checks the copy-fitted bandwidth), the Llama-2-7B GEMM shapes, the (64, 8)-head
  decode-attention shapes, page size 64 of the gathered attention, top-k over 16 rows, RMSNorm.

The end-to-end check prices a whole Llama-3.1-8B decode step with the fitted parameters and compares it
with the measured CUDA-graph replay of measure.py's reference step (e2e_decode family).
"""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from scipy.optimize import least_squares

from hwmodels.errors import SparsesimError
from hwmodels.roofline import price
from hwmodels.spec import FITTED_DIR, Efficiency, HardwareSpec, load_hardware

DATA_DIR = Path(__file__).parent / "data"

#: torch's device name -> shipped spec name
DEVICE_SPECS = {"NVIDIA H100 80GB HBM3": "H100-SXM", "NVIDIA H200": "H200"}

REQUIRED_COLUMNS = ("device", "family", "op_kind", "dtype", "backend", "median_us")
DTYPE_BYTES = {"fp32": 4.0, "float32": 4.0, "bf16": 2.0, "bfloat16": 2.0, "fp16": 2.0, "float16": 2.0,
               "fp8": 1.0, "float8_e4m3fn": 1.0, "fp8_e4m3": 1.0}

#: The attention backend whose rows calibrate `attention`: cuDNN's SDPA kernel through torch, the most
#: regular of the measured decode kernels (FlashAttention-2's rows are kept as a cross-kernel check:
#: gathered attention ran on FA2). The dense strategy's accounting with gqa_packing='decode_only' is
#: used for every SDPA row (one query row: the GQA group shares K/V; several rows: every head streams).
ATTN_BACKEND = "cudnn+gqa_native"
CROSS_BACKEND = "flash+gqa_native"


def holdout_mask(df: pd.DataFrame) -> np.ndarray:
    """Rows held out of every fit: whole shape families (see module docstring)."""
    fam = df["family"].to_numpy()
    m = np.zeros(len(df), dtype=bool)
    m |= fam == "reduce"
    m |= (fam == "gemm") & df["note"].fillna("").str.contains("llama2", case=False).to_numpy()
    m |= (fam == "decode_attn") & (df["heads"].to_numpy() == 64)
    m |= (fam == "paged_attn") & (df["page_size"].to_numpy() == 64)
    m |= (fam == "topk") & (df["batch"].to_numpy() == 16)
    m |= (fam == "elementwise") & (df["op_kind"].to_numpy() == "rmsnorm")
    return m


def load_measurements(path: str | Path) -> pd.DataFrame:
    """Read and validate a measure.py CSV; rows without a time (skipped/unavailable) are dropped."""
    p = Path(path)
    if not p.exists():
        raise SparsesimError("no such file", file=str(p))
    try:
        df = pd.read_csv(p)
    except Exception as e:  # pandas raises many kinds
        raise SparsesimError(f"is not a readable CSV: {e}", file=str(p)) from None
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise SparsesimError(f"is missing columns {missing}; is it a measure.py CSV?", file=str(p))
    df = df[pd.to_numeric(df["median_us"], errors="coerce") > 0].copy()
    df["median_us"] = df["median_us"].astype(float)
    if "note" not in df.columns:
        df["note"] = ""
    return df.reset_index(drop=True)


def spec_for(df: pd.DataFrame, device: str | None = None) -> HardwareSpec:
    name = device or DEVICE_SPECS.get(str(df["device"].iloc[0]))
    if name is None:
        raise SparsesimError(f"measured device {df['device'].iloc[0]!r} has no spec mapping; pass --device NAME "
                             f"(a name from `sparsesim hw list` or a spec path)")
    hw = load_hardware(name)
    return hw.with_efficiency(Efficiency())  # fit from the datasheet, never from an earlier fit


# ---------------------------------------------------------------------------------------------------
# measured rows -> Op rows (the simulator's accounting)
# ---------------------------------------------------------------------------------------------------
def _num(df, col, default=np.nan):
    return pd.to_numeric(df[col], errors="coerce").fillna(default).to_numpy(dtype=float) \
        if col in df.columns else np.full(len(df), default)


def build_ops(df: pd.DataFrame):
    """An OpTable with one setting per row of `df` (families the fit understands), plus the families'
    index. Unknown families get no ops and are reported as such."""
    from simulator.ops import OpBuilder

    n = len(df)
    b = OpBuilder(n)
    fam = df["family"].to_numpy()
    kind = df["op_kind"].to_numpy()
    dt = np.array([DTYPE_BYTES.get(str(x), 2.0) for x in df["dtype"]])
    nbytes = _num(df, "bytes", 0.0)
    M, N, K = _num(df, "m", 0), _num(df, "n", 0), _num(df, "k", 0)

    sel = fam == "copy"
    b.add("copy", "copy", bytes_read=nbytes, bytes_written=nbytes, where=sel)
    sel = fam == "reduce"
    b.add("reduce", "copy", bytes_read=nbytes, bytes_written=4.0, where=sel)

    for dtype, wb in (("bf16", 2.0), ("fp8", 1.0)):
        sel = (fam == "gemm") & (dt == wb)
        # [M, K] @ [K, N]: as simulator.layers.gemm; fp8 GEMMs read fp8 operands and write bf16
        b.add("gemm", "gemm", flops=2 * M * N * K, bytes_read=K * N * wb + M * K * wb, bytes_written=M * N * 2.0,
              dtype=dtype, where=sel)

    # elementwise: F.rms_norm one kernel (read + write); F.silu(g) * u two kernels; add one kernel
    Bn = _num(df, "batch", 0) * _num(df, "n", 0)
    sel = (fam == "elementwise") & (kind == "rmsnorm")
    # torch's fused RMSNorm runs one thread block per row
    b.add("rmsnorm", "elementwise", flops=4 * Bn, bytes_read=Bn * 2, bytes_written=Bn * 2, dtype="fp32",
          parallel_units=_num(df, "batch", 1), where=sel)
    sel = (fam == "elementwise") & (kind == "silu_mul")
    b.add("silu", "elementwise", flops=4 * Bn, bytes_read=Bn * 2, bytes_written=Bn * 2, dtype="fp32", where=sel)
    b.add("mul", "elementwise", flops=Bn, bytes_read=2 * Bn * 2, bytes_written=Bn * 2, dtype="fp32", where=sel)
    sel = (fam == "elementwise") & (kind == "add")
    b.add("add", "elementwise", flops=nbytes / 2, bytes_read=2 * nbytes, bytes_written=nbytes,
          dtype="fp32", where=sel)

    # top-k: torch.topk's own dispatch (aten/src/ATen/native/cuda/TensorTopK.cpp / .cu), see torch_topk_ops
    sel = fam == "topk"
    torch_topk_ops(b, _num(df, "batch", 0), _num(df, "row_len", 0), dt, _num(df, "topk_k", 0), sel)

    # decode attention (and the attention half of gathered attention) through the dense strategy
    backend = df["backend"].fillna("").to_numpy()
    _add_attention(b, df, (fam == "decode_attn") & ((backend == ATTN_BACKEND) | (backend == CROSS_BACKEND)),
                   "context")
    gathered = (fam == "paged_attn") & (kind != "gather")
    _add_attention(b, df, gathered & (kind == "attn_gathered"), "selected_tokens")
    _add_attention(b, df, gathered & (kind == "gather+attn"), "selected_tokens")
    # the gather: two index_selects (K, then V) of the selected pages: each reads and writes its bytes
    Bh = _num(df, "batch", 0) * _num(df, "kv_heads", 0)
    sel_bytes = Bh * _num(df, "selected_tokens", 0) * _num(df, "head_dim", 0) * 2.0
    sel = (fam == "paged_attn") & ((kind == "gather") | (kind == "gather+attn"))
    b.add("gather", "gather", bytes_read=sel_bytes, bytes_written=sel_bytes, where=sel, count=2.0)
    return b.build()


def torch_topk_ops(b, rows, L, dtype_bytes, k, sel) -> None:
    """Kernels of torch.topk(sorted=True) on `rows` rows of length `L`, following PyTorch's dispatch
    (aten/src/ATen/native/cuda/TensorTopK.cpp should_use_sort, TensorTopK.cu should_use_multiblock).
    Top-k kernels are bound by per-element instruction work (digit extraction, shared-memory histogram
    atomics), not by bytes. That work is written as `flops` in the same flop-equivalent currency as the
    top-k strategies (simulator/strategies/topk.py: one SM-cycle of vector work = 256; a plain sweep
    SWEEP_FLOPS per element, a shared-memory histogram atomic HIST_ATOMIC_FLOPS per element), so the
    fitted compute[topk] prices those strategies consistently.

    sort path    rows <= 10 and L >= 100,000: a segmented radix sort of (key, int64 index) pairs, per 8-bit
                 digit an upsweep, a scan and a downsweep kernel (CUB's radix-sort structure), plus the
                 index fill and the copies of the first k
    multi-block  (rows, L) inside should_use_multiblock's bounds: per 8-bit digit (RADIX_BITS = 8) a
                 counting kernel over all rows (rows x L / 4096 blocks) and a small within-k-counts kernel;
                 two prefix-sum kernels; a gather kernel reading the rows once
    single-block otherwise: one thread block per row sweeps its row once per 2-bit digit (SortingRadix-
                 Select.cuh RADIX_BITS = 2) and once more to gather: one kernel whose sweeps are
                 synchronized phases (sync_steps)
    and finally (sorted=True) a sort of the k selected (value, index) pairs per row.
    """
    from simulator.strategies.topk import HIST_ATOMIC_FLOPS, SWEEP_FLOPS

    bits = dtype_bytes * 8
    rows = np.asarray(rows, float)
    L = np.asarray(L, float)
    n = rows * L
    count_work = n * (SWEEP_FLOPS + HIST_ATOMIC_FLOPS)   # a digit-counting pass: sweep + histogram atomic
    use_sort = sel & (rows <= 10) & (L >= 100_000)
    mb = sel & ~use_sort & (((rows <= 20) & (L >= 20000)) | ((rows > 20) & (rows <= 40) & (L >= 10000))
                            | ((rows > 40) & (rows <= 80) & (L >= 8000)) | ((rows > 80) & (rows < 200) & (L >= 5000))
                            | ((rows >= 200) & (rows < 800) & (L >= 3000)) | ((rows >= 800) & (L >= 800)))
    sb = sel & ~use_sort & ~mb
    data = n * dtype_bytes
    pairs = n * (dtype_bytes + 8)
    passes8 = bits / 8
    b.add("topk_sort_pass", "topk", flops=count_work, bytes_read=pairs, bytes_written=pairs, count=3 * passes8,
          dtype="fp32", where=use_sort)
    b.add("topk_sort_misc", "topk", bytes_written=n * 8, count=3.0, dtype="fp32", where=use_sort)
    units_mb = rows * np.ceil(L / 4096)  # blocks per slice: items per thread x 256 threads (TensorTopK.cu)
    b.add("topk_count", "topk", flops=count_work, bytes_read=data, reread_bytes=data * (passes8 - 1) / passes8,
          working_set=data, parallel_units=units_mb, count=passes8, dtype="fp32", where=mb)
    b.add("topk_within_k", "topk", bytes_read=units_mb * 1024.0, count=passes8, dtype="fp32", where=mb)
    b.add("topk_scan", "topk", bytes_read=units_mb * 8.0, count=2.0, dtype="fp32", where=mb)
    b.add("topk_gather", "topk", flops=n * SWEEP_FLOPS, bytes_read=data, bytes_written=rows * k * (dtype_bytes + 8),
          parallel_units=units_mb, dtype="fp32", where=mb)
    sweeps = bits / 2 + 1
    # single-block digit counting uses warp ballots and block reductions (no atomics): 2 sweeps' work each
    b.add("topk_single_block", "topk", flops=n * sweeps * 2 * SWEEP_FLOPS, bytes_read=data * sweeps,
          reread_bytes=data * (sweeps - 1), working_set=data, parallel_units=rows, sync_steps=sweeps,
          dtype="fp32", where=sb)
    b.add("topk_sort_k", "topk", flops=rows * k * 8 * 16.0, bytes_read=rows * k * (dtype_bytes + 8),
          bytes_written=rows * k * (dtype_bytes + 8), parallel_units=rows, dtype="fp32", where=sel & ~use_sort)


def _add_attention(b, df: pd.DataFrame, sel: np.ndarray, ctx_col: str) -> None:
    if not sel.any():
        return
    from simulator.strategies.base import StepShape
    from simulator.strategies.dense import DenseAttention

    class _Model:  # the few ModelSpec fields the dense decode accounting reads
        mla = None

    heads, kvh = _num(df, "heads", 1), _num(df, "kv_heads", 1)
    kern = DenseAttention(gqa_packing="decode_only")
    # the accounting is per (heads, kv heads, head dim) group; price each group with its own combo
    keys = sorted({(int(h), int(k), int(d)) for h, k, d, s in
                   zip(heads, kvh, _num(df, "head_dim", 128), sel) if s})
    for h, k, d in keys:
        g = sel & (heads == h) & (kvh == k) & (_num(df, "head_dim", 128) == d)
        model = _Model()
        model.head_dim = d
        combo = _AttnCombo(h, k, model)
        shape = StepShape(batch=np.where(g, _num(df, "batch", 1), 1.0), query_rows=np.where(g, _num(df, "q_rows", 1), 1.0),
                          context=np.where(g, _num(df, ctx_col, 1), 1.0), extra={"layers": 1.0})
        kern.decode_ops(_Masked(b, g), combo, shape)


class _AttnCombo:
    """The Combo fields the dense decode accounting reads, for a bare attention kernel."""

    def __init__(self, heads: int, kv_heads: int, model):
        self.attn_heads_dev, self.attn_kv_heads_dev, self.model = heads, kv_heads, model
        self.attn_dp, self.kvbytes = 1, 2.0


class _Masked:
    """Forwards OpBuilder.add calls restricted to the settings in `mask`."""

    def __init__(self, b, mask):
        self.b, self.mask, self.n = b, mask, b.n

    def add(self, *a, where=None, **kw):
        m = self.mask if where is None else (self.mask & np.broadcast_to(np.asarray(where, bool), self.mask.shape))
        self.b.add(*a, where=m, **kw)


# ---------------------------------------------------------------------------------------------------
# fitting
# ---------------------------------------------------------------------------------------------------
#: parameter name -> (Efficiency field path, initial value, lower, upper)
FAMILY_PARAMS = {
    "copy": [("memory.copy", 0.9, 0.3, 1.0), ("fixed_us.copy", 2.0, 0.0, 50.0)],
    "gemm": [("memory.gemm", 0.8, 0.2, 1.0), ("compute.gemm", 0.8, 0.2, 1.0), ("compute_dtype.fp8", 0.9, 0.3, 1.0),
             ("fixed_us.gemm", 2.0, 0.0, 50.0), ("overlap_p", 3.0, 1.0, 16.0)],
    "decode_attn": [("memory.attention", 0.8, 0.1, 1.0), ("compute.attention", 0.5, 0.05, 1.0),
                    ("fixed_us.attention", 5.0, 0.0, 100.0), ("saturation.attention", 0.5, 0.05, 8.0)],
    "paged_attn": [("memory.gather", 0.5, 0.02, 1.0), ("fixed_us.gather", 2.0, 0.0, 100.0)],
    "topk": [("memory.topk", 0.8, 0.05, 1.0), ("compute.topk", 0.3, 0.01, 1.0), ("fixed_us.topk", 5.0, 0.0, 100.0),
             ("sync_us.topk", 2.0, 0.0, 50.0)],
    "elementwise": [("memory.elementwise", 0.7, 0.05, 1.0), ("fixed_us.elementwise", 1.0, 0.0, 50.0)],
}
FIT_ORDER = ("copy", "gemm", "elementwise", "decode_attn", "paged_attn", "topk")


def efficiency_with(eff: Efficiency, updates: dict[str, float]) -> Efficiency:
    compute, memory = dict(eff.compute), dict(eff.memory)
    cd, fixed = dict(eff.compute_dtype), dict(eff.fixed_s)
    sat = dict(eff.saturation)
    for path, v in updates.items():
        part, _, key = path.partition(".")
        if part == "memory":
            memory[key] = v
        elif part == "compute":
            compute[key] = v
        elif part == "compute_dtype":
            cd[key] = v
        elif part == "fixed_us":
            fixed[key] = v * 1e-6
        elif part == "sync_us":
            eff = replace(eff, sync_s={**eff.sync_s, key: v * 1e-6})
        elif part == "saturation":
            sat[key] = v
        elif part == "overlap_p":
            eff = replace(eff, overlap_p=v)
    return replace(eff, compute=compute, memory=memory, compute_dtype=cd, fixed_s=fixed, saturation=sat)


def predict_us(ops, hw: HardwareSpec, eff: Efficiency, families: np.ndarray) -> np.ndarray:
    """Predicted time per measured row (µs), pricing each row's ops as isolated back-to-back kernels."""
    t = price(ops, hw.with_efficiency(eff), "graph")
    return np.bincount(ops.setting, weights=t, minlength=ops.n_settings) * 1e6


def fit(df: pd.DataFrame, hw: HardwareSpec) -> tuple[Efficiency, dict]:
    """Fit every family on its non-held-out rows. Returns the Efficiency and fit metadata."""
    ops = build_ops(df)
    hold = holdout_mask(df)
    has_ops = np.bincount(ops.setting, minlength=len(df)) > 0
    fam = df["family"].to_numpy()
    meas = df["median_us"].to_numpy()
    launch = df[df["family"] == "launch"].set_index("op_kind")["median_us"]
    eff = Efficiency(source="")
    eff = replace(eff, launch_graph_s=float(launch["launch_graph"]) * 1e-6 if "launch_graph" in launch else None,
                  launch_eager_s=float(launch["launch_eager"]) * 1e-6 if "launch_eager" in launch else None)
    hw_l = replace(hw, launch_graph_s=eff.launch_graph_s or hw.launch_graph_s,
                   launch_eager_s=eff.launch_eager_s or hw.launch_eager_s)
    meta = {}
    cta = _topk_cta_terms(hw.name)
    if cta:  # the topk_cta kind belongs to fit_topk_cta.py: carry the committed values through
        eff = efficiency_with(eff, cta)
    pre = _prefill_compute(hw.name)
    if pre is not None:  # compute.attention belongs to fit_prefill.py (decode rows cannot pin it)
        eff = efficiency_with(eff, {"compute.attention": pre})
    for family in FIT_ORDER:
        params = FAMILY_PARAMS[family]
        if pre is not None:
            params = [p for p in params if p[0] != "compute.attention"]
        rows = fit_rows(df, family) & ~hold & has_ops
        if not rows.any():
            meta[family] = {"rows": 0}
            continue
        names = [p[0] for p in params]
        x0 = np.array([p[1] for p in params])
        lo, hi = np.array([p[2] for p in params]), np.array([p[3] for p in params])

        def resid(x, rows=rows, names=names):
            e = efficiency_with(eff, dict(zip(names, x)))
            return np.log(predict_us(ops, hw_l, e, fam)[rows] / meas[rows])

        r = least_squares(resid, x0, bounds=(lo, hi), x_scale="jac")
        eff = efficiency_with(eff, dict(zip(names, r.x)))
        meta[family] = {"rows": int(rows.sum()), "params": {n: float(v) for n, v in zip(names, r.x)},
                        "rms_log_error": float(np.sqrt(np.mean(r.fun ** 2)))}
    return eff, meta


def _topk_cta_terms(device: str, out_dir: Path | None = None) -> dict[str, float]:
    """The topk_cta parameters a committed fit_topk_cta.py fit wrote for `device` ({} if none)."""
    p = (out_dir or FITTED_DIR) / f"{device}.yaml"
    if not p.exists():
        return {}
    doc = yaml.safe_load(p.read_text()) or {}
    if "topk_cta" not in doc:
        return {}
    out = {}
    for part in ("compute", "memory", "saturation", "fixed_us", "sync_us"):
        v = (doc.get(part) or {}).get("topk_cta")
        if v is not None:
            out[f"{part}.topk_cta"] = float(v)
    return out


def _prefill_compute(device: str, out_dir: Path | None = None) -> float | None:
    """compute.attention as a committed fit_prefill.py fit wrote it for `device` (None if none)."""
    p = (out_dir or FITTED_DIR) / f"{device}.yaml"
    if not p.exists():
        return None
    doc = yaml.safe_load(p.read_text()) or {}
    return float(doc["prefill_attn"]["compute_attention"]) if "prefill_attn" in doc else None


def fit_rows(df: pd.DataFrame, family: str) -> np.ndarray:
    """Rows of `family` its parameters may be fitted on (before removing held-out families)."""
    rows = df["family"].to_numpy() == family
    if family == "paged_attn":
        rows &= df["op_kind"].to_numpy() == "gather"
    if family == "decode_attn":
        rows &= (_num(df, "q_rows", 1) == 1) & (df["backend"].fillna("").to_numpy() == ATTN_BACKEND)
    return rows


def errors(df: pd.DataFrame, hw: HardwareSpec, eff: Efficiency) -> pd.DataFrame:
    """Predicted vs measured per row, with fit/held-out split and absolute percentage error."""
    ops = build_ops(df)
    hw_l = replace(hw, launch_graph_s=eff.launch_graph_s or hw.launch_graph_s,
                   launch_eager_s=eff.launch_eager_s or hw.launch_eager_s)
    pred = predict_us(ops, hw_l, eff, df["family"].to_numpy())
    has = np.bincount(ops.setting, minlength=len(df)) > 0
    fitted = np.zeros(len(df), dtype=bool)
    for family in FIT_ORDER:
        fitted |= fit_rows(df, family)
    hold = holdout_mask(df)
    out = df.assign(predicted_us=np.where(has, pred, np.nan), held_out=hold,
                    part=np.where(hold, "held-out", np.where(fitted, "fit", "predicted")))
    out["ape_pct"] = (out["predicted_us"] / out["median_us"] - 1).abs() * 100
    return out[has].reset_index(drop=True)


def group_label(r) -> str:
    """The error-report group of a measured row: op kind, refined where kernels differ."""
    if r["family"] == "paged_attn":
        return f"paged_attn:{r['op_kind']}" + (" (FA2)" if "attn" in r["op_kind"] else "")
    if r["family"] == "elementwise":
        return f"elementwise:{r['op_kind']}"
    if r["family"] == "decode_attn":
        kernel = "cuDNN" if r["backend"] == ATTN_BACKEND else "FA2 cross-check"
        return f"verify_attn q_rows>1, {kernel}" if r["q_rows"] > 1 else f"decode_attn q_rows=1, {kernel}"
    if r["family"] == "gemm":
        return "gemm fp8" if "fp8" in str(r["dtype"]) or "float8" in str(r["dtype"]) else "gemm bf16"
    return r["family"]


def error_table(err: pd.DataFrame) -> pd.DataFrame:
    """Median and worst absolute percentage error per group, for fitted, held-out and predicted-only rows."""
    e = err.assign(group=err.apply(group_label, axis=1))
    g = e.groupby(["group", "part"])["ape_pct"]
    return pd.DataFrame({"rows": g.size(), "median_ape_pct": g.median(), "worst_ape_pct": g.max()}).reset_index()


# ---------------------------------------------------------------------------------------------------
# end to end: the Llama-3.1-8B decode step
# ---------------------------------------------------------------------------------------------------
def e2e_comparison(df: pd.DataFrame, hw: HardwareSpec) -> pd.DataFrame:
    """Measured CUDA-graph decode steps of measure.py's Llama-3.1-8B reference vs the simulator's step
    (same batch, KV length T + 1, bf16, graph launches, plain-PyTorch kernels (`unfused`, as the
    reference is written), `hw` with its efficiencies)."""
    from simulator.combo import make_combo
    from simulator.pricing import decode_ops

    rows = df[(df["family"] == "e2e_decode") & (df["op_kind"] == "decode_step_graph")]
    if rows.empty:
        return pd.DataFrame()
    combo = make_combo(hw, "Llama-3.1-8B", kv_dtype="bf16", weight_dtype="bf16", launch="graph", kernels="unfused")
    B = rows["batch"].to_numpy(float)
    T = rows["context"].to_numpy(float) + 1
    ops, _ = decode_ops(combo, B, T)
    t = np.bincount(ops.setting, weights=price(ops, hw, "graph"), minlength=len(B)) * 1e3
    out = pd.DataFrame({"batch": B.astype(int), "context": (T - 1).astype(int),
                        "measured_ms": rows["median_us"].to_numpy() / 1e3, "simulated_ms": t})
    out["error_pct"] = (out["simulated_ms"] / out["measured_ms"] - 1) * 100
    return out


# ---------------------------------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------------------------------
def write_fitted(eff: Efficiency, meta: dict, hw: HardwareSpec, data_file: str, table: pd.DataFrame,
                 e2e: pd.DataFrame, out_dir: Path = FITTED_DIR) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = {
        "source": f"fitted by hwmodels/calibration/fit.py to {Path(data_file).name} (measured on "
                  f"{hw.name}; its held-out errors are listed in the fitted file)",
        "device": hw.name,
        "data": Path(data_file).name,
        "compute": {k: round(v, 4) for k, v in eff.compute.items() if v != 1.0},
        "memory": {k: round(v, 4) for k, v in eff.memory.items() if v != 1.0},
        "compute_dtype": {k: round(v, 4) for k, v in eff.compute_dtype.items()},
        "fixed_us": {k: round(v * 1e6, 3) for k, v in eff.fixed_s.items() if v},
        "sync_us": {k: round(v * 1e6, 3) for k, v in eff.sync_s.items() if v},
        "saturation": {k: round(v, 4) for k, v in eff.saturation.items() if v != 1.0},
        "overlap_p": None if eff.overlap_p is None else round(eff.overlap_p, 4),
        "l2_fraction": round(eff.l2_fraction, 4),
        "launch_us": {k: round(v * 1e6, 3) for k, v in (("graph", eff.launch_graph_s),
                                                         ("eager", eff.launch_eager_s)) if v},
        "fit": meta,
        "errors_pct": [{k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()}
                       for r in table.to_dict("records")],
        "end_to_end": [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}
                       for r in e2e.to_dict("records")],
    }
    p = out_dir / f"{hw.name}.yaml"
    if p.exists():  # keep what the interconnect fit (fit_links.py) wrote
        old = yaml.safe_load(p.read_text()) or {}
        for part in ("memory", "fixed_us"):
            for k in ("collective", "alltoall"):
                if k in (old.get(part) or {}):
                    doc[part][k] = old[part][k]
        for k in ("link_latency_us", "links", "latency", "topk_cta", "prefill_attn"):  # kept: owned by
            if k in old:                                       # fit_links / fit_latency / fit_topk_cta / fit_prefill
                doc[k] = old[k]
        for part in ("compute", "memory", "saturation", "fixed_us", "sync_us"):
            if "topk_cta" in (old.get(part) or {}):
                doc.setdefault(part, {})["topk_cta"] = old[part]["topk_cta"]
    p.write_text("# Fitted roofline efficiencies. Regenerate: sparsesim calibrate fit "
                 f"hwmodels/calibration/data/{Path(data_file).name}\n"
                 + yaml.safe_dump(_plain(doc), sort_keys=False, width=110))
    return p


def _plain(x):
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, float) and math.isnan(x):
        return None
    return x


def fitted_efficiency(hw_name: str) -> Efficiency:
    from hwmodels.spec import load_efficiency

    return load_efficiency(hw_name)


def latest_data_files() -> list[Path]:
    """The committed measurement CSVs, newest per device."""
    files = sorted(DATA_DIR.glob("*.csv"))
    # measure.py CSVs only: the collectives, latency and single-CTA top-k campaigns have their own fits
    return [f for f in files if not f.stem.endswith("_quick") and "_collectives_" not in f.stem
            and not f.stem.startswith(("latency_", "topk_cta_", "prefill_attn_", "hf_decode_"))]
