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
                             fitted on one-query-row decode (cuDNN SDPA, the generic dense model);
                             every other attention row (verification, FA2) is checked, not fitted, as
                             its own kernel family (attn_cudnn / attn_fa2 ..., fit-regimes' terms)
  paged_attn   gather        memory[gather], fixed_us[gather]   (the attention part: FA2's family, as above)
  topk         (not fitted)  torch.topk's kind `topk` belongs to `calibrate fit-regimes` (measure_regimes.py's rows,
                             its one owner; its fit reaches 7.7 / 17.8 % held-out on its campaign and 17 / 36 % on
                             this CSV's topk rows, a fresh fit here 17 / 28 % on its own rows and 12 / 19 % on the
                             other campaign's held-out rows); this CSV's topk rows are not in this fit's tables
  elementwise  elementwise   memory[elementwise], fixed_us[elementwise]
  launch       -             launch_us graph / eager: taken directly from the measurement

Held out from every fit, then predicted (whole shape families, never random rows):
  reduce (read-only sum: checks the copy-fitted bandwidth), the Llama-2-7B GEMM shapes, the (64, 8)-head
  decode-attention shapes, page size 64 of the gathered attention, top-k over 16 rows, RMSNorm.

The end-to-end check prices a whole Llama-3.1-8B decode step with the fitted parameters and compares it
with the measured CUDA-graph replay of measure.py's reference step (e2e_decode family).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from hwmodels import datafiles as DF
from hwmodels.calibration import DATA_DIR, DEVICE_SPECS
from hwmodels.errors import SparsesimError
from hwmodels.roofline import price
from hwmodels.spec import Efficiency, HardwareSpec
from simulator.calibration import checks as C
from simulator.calibration.checks import efficiency_with

__all__ = ["DATA_DIR", "DEVICE_SPECS"]

REQUIRED_COLUMNS = ("device", "family", "op_kind", "dtype", "backend", "median_us")
#: the families measure.py writes, and the shape columns each must have as finite positive numbers
FAMILY_SHAPES = {
    "launch": (), "copy": ("bytes",), "reduce": ("bytes",), "gemm": ("m", "n", "k"),
    "elementwise": (), "topk": ("batch", "row_len", "topk_k"),
    "decode_attn": ("batch", "heads", "kv_heads", "head_dim", "context", "q_rows"),
    "paged_attn": ("batch", "heads", "kv_heads", "head_dim", "context", "selected_tokens", "page_size"),
    "e2e_decode": ("batch", "context"),
}
ELEMENTWISE_SHAPES = {"rmsnorm": ("batch", "n"), "silu_mul": ("batch", "n"), "add": ("bytes",)}
NUMERIC_COLUMNS = ("m", "n", "k", "batch", "heads", "kv_heads", "head_dim", "context", "q_rows", "pages",
                   "page_size", "selected_tokens", "row_len", "topk_k", "bytes", "layers", "n_kernels")

#: Refusal bounds of `calibrate fit` (simulator.calibration.checks.check_bounds): op kind -> (the report
#: group and part that checks it, bound on its median absolute error %, bound on its 90th percentile %).
#: Reasoning: each bound is 3-5 x the held-out median the committed H100 / H200 fits reach (gemm 2.4 / 3.7 %,
#: cuDNN decode attention 4.0 / 4.6 %, reduce 3.0 / 4.6 %, gather 2.2 / 4.4 %, torch.topk 8.0 / 8.0 %), so a
#: fit on another GPU or library version that the model describes equally well passes, while data the model
#: does not describe (times in the wrong unit, rows from another kernel, corrupted values: a x1000 CSV gives
#: ~99 % errors) is refused. The p90 bounds allow the known weak corners (small reductions, tiny gathers)
#: their 20-40 % without letting a whole family drift. Elementwise kernels have no held-out family of the
#: same kernel structure (RMSNorm's one-block-per-row kernel is another class, reported only), so their fit
#: rows are checked instead.
REFUSAL_BOUNDS = {
    "copy": ("reduce|held-out", 15.0, 45.0),
    "gemm": ("gemm bf16|held-out", 12.0, 30.0),
    "attention": ("decode_attn q_rows=1, cuDNN|held-out", 15.0, 35.0),
    "gather": ("paged_attn:gather|held-out", 15.0, 60.0),
    "elementwise": ("elementwise:silu_mul|fit", 15.0, 35.0),
}
#: the fit family -> the op kind its parameters set
FAMILY_KIND = {"copy": "copy", "gemm": "gemm", "elementwise": "elementwise", "decode_attn": "attention",
               "paged_attn": "gather", "topk": "topk"}
DTYPE_BYTES = {"fp32": 4.0, "float32": 4.0, "bf16": 2.0, "bfloat16": 2.0, "fp16": 2.0, "float16": 2.0,
               "fp8": 1.0, "float8_e4m3fn": 1.0, "fp8_e4m3": 1.0}

#: The attention backend whose rows calibrate `attention`: cuDNN's SDPA kernel through torch, the most
#: regular of the measured decode kernels (FlashAttention-2's rows are kept as a cross-kernel check:
#: gathered attention ran on FA2). Its one-query-row rows are priced by the dense strategy's generic model
#: (kind `attention`, gqa_packing='decode_only'); every other priced SDPA row by its backend's kernel
#: family (_add_attention).
ATTN_BACKEND = "cudnn+gqa_native"
CROSS_BACKEND = "flash+gqa_native"
#: measure.py's SDPA backend (its name before '+gqa_...'; gathered attention: after 'index_select + ') -> the
#: dense `kernel` family that prices its rows when they do not calibrate kind `attention`
#: (simulator/kernels/decode_attention.py: each backend is its own kernel, with its own split rule, tiles and
#: combine kernel; fitted by `calibrate fit-regimes`). The rows priced here are cudnn+gqa_native and
#: flash+gqa_native (decode / verification) and flash+gqa_native (gathered attention); a backend not in this
#: map would stay on the generic model. Not priced at all, as before: the *+gqa_none rows (K/V expanded to
#: every query head, another memory traffic) and the 4 `efficient` rows (memeff family, never checked here).
BACKEND_FAMILY = {"cudnn": "cudnn", "flash": "fa2", "efficient": "memeff"}


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
    """Read and validate a measure.py CSV (simulator.calibration.checks.read_csv: one line naming the file
    and what is wrong for any malformed input). Rows without a time (skipped / unavailable kernels, an
    empty median_us) are left out and counted in `df.attrs['untimed']`."""
    df, untimed = C.read_csv(path, REQUIRED_COLUMNS, "a measure.py CSV")
    file = str(path)
    fam = df["family"].astype(str).str.strip().to_numpy()
    unknown = sorted(set(fam) - set(FAMILY_SHAPES))
    if unknown:
        n = int(np.isin(fam, unknown).sum())
        raise C.CalibrationError(f"column family: {n} row(s) of unknown families {unknown[:5]}; measure.py writes "
                                 f"{', '.join(FAMILY_SHAPES)}", file=file, field="family")
    df["family"] = fam
    for family, cols in FAMILY_SHAPES.items():
        C.positive_columns(df, fam == family, cols, file, family)
    kind = df["op_kind"].astype(str).str.strip().to_numpy()
    for op, cols in ELEMENTWISE_SHAPES.items():
        C.positive_columns(df, (fam == "elementwise") & (kind == op), cols, file, f"elementwise {op}")
    dt = df["dtype"].astype(str).str.strip()
    priced_dtype = np.isin(fam, ["gemm", "topk"])
    bad = priced_dtype & ~dt.isin(list(DTYPE_BYTES)).to_numpy()
    if bad.any():
        raise C.CalibrationError(f"column dtype: {int(bad.sum())} gemm/topk row(s) have a dtype outside "
                                 f"{sorted(DTYPE_BYTES)} (first: {dt[bad].iloc[0]!r})", file=file, field="dtype")
    if not (fam != "launch").any():
        raise C.CalibrationError("has only launch rows: there are no kernels to fit", file=file)
    df = C.numeric(df, NUMERIC_COLUMNS)
    if "note" not in df.columns:
        df["note"] = ""
    df["op_kind"] = kind
    df.attrs["untimed"] = untimed
    df.attrs["file"] = file
    return df


def spec_for(df: pd.DataFrame, device: str | None = None) -> HardwareSpec:
    """The measured device's spec with its DATASHEET values (simulator.calibration.checks.datasheet_spec):
    a fit never starts from an earlier fit (D16)."""
    name = device or DEVICE_SPECS.get(str(df["device"].iloc[0]))
    if name is None:
        raise SparsesimError(f"measured device {df['device'].iloc[0]!r} has no spec mapping; pass --device NAME "
                             f"(a name from `sparsesim hw list` or a spec path)")
    return C.datasheet_spec(name)


# ---------------------------------------------------------------------------------------------------
# measured rows -> Op rows (the simulator's accounting)
# ---------------------------------------------------------------------------------------------------
def _num(df, col, default=np.nan):
    return pd.to_numeric(df[col], errors="coerce").fillna(default).to_numpy(dtype=float) \
        if col in df.columns else np.full(len(df), default)


def build_ops(df: pd.DataFrame, sms: int | None = None):
    """An OpTable with one setting per row of `df` (families the fit understands), plus the families'
    index. Unknown families get no ops and are reported as such. `sms`: the measured GPU's SM count (the
    attention kernel families' split rules read it); default: the measured device's spec (spec_for)."""
    from simulator.ops import OpBuilder

    if sms is None:
        sms = spec_for(df).units
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

    # decode attention (and the attention half of gathered attention) through the dense strategy: the
    # generic model for the rows that calibrate kind `attention`, the backend's kernel family for the others
    backend = df["backend"].fillna("").to_numpy()
    _add_attention(b, df, (fam == "decode_attn") & ((backend == ATTN_BACKEND) | (backend == CROSS_BACKEND)),
                   "context", sms)
    gathered = (fam == "paged_attn") & (kind != "gather")
    _add_attention(b, df, gathered & (kind == "attn_gathered"), "selected_tokens", sms)
    _add_attention(b, df, gathered & (kind == "gather+attn"), "selected_tokens", sms)
    # the gather: two index_selects (K, then V) of the selected pages: each reads and writes its bytes
    Bh = _num(df, "batch", 0) * _num(df, "kv_heads", 0)
    sel_bytes = Bh * _num(df, "selected_tokens", 0) * _num(df, "head_dim", 0) * 2.0
    sel = (fam == "paged_attn") & ((kind == "gather") | (kind == "gather+attn"))
    b.add("gather", "gather", bytes_read=sel_bytes, bytes_written=sel_bytes, where=sel, count=2.0)
    return b.build()


def torch_topk_ops(b, rows, L, dtype_bytes, k, sel) -> None:
    """torch.topk's kernels as the `topk: torch_topk` strategy prices them (simulator.strategies.topk
    torch_topk_dispatch_ops: PyTorch's own dispatch)."""
    from simulator.strategies.topk import torch_topk_dispatch_ops

    torch_topk_dispatch_ops(b, rows, L, dtype_bytes, k, sel)


def sdpa_family(backend) -> np.ndarray:
    """The kernel family (BACKEND_FAMILY) of each row's SDPA backend; '' where it has none."""
    names = (str(x).rsplit(" + ", 1)[-1].split("+", 1)[0].strip() for x in pd.Series(backend).fillna(""))
    return np.array([BACKEND_FAMILY.get(x, "") for x in names], dtype=object)


def _add_attention(b, df: pd.DataFrame, sel: np.ndarray, ctx_col: str, sms: int) -> None:
    """SDPA rows `sel` (context = column `ctx_col`) through `attention: dense` (fit_regimes.attention_ops, as
    the simulator emits them):
      * the rows kind `attention` is fitted and checked on (fit_rows 'decode_attn': one query row, cuDNN): the
        generic model (kernel 'generic', kind `attention`), as they were fitted;
      * every other row (verification on cuDNN, the FA2 cross-check, FA2's gathered attention): its backend's
        kernel family (BACKEND_FAMILY: kinds attn_cudnn / attn_cudnn_rows / attn_fa2 and their combine
        kernels): another kernel than the one `attention` describes (the kernel families), priced by
        the terms `calibrate fit-regimes` fitted for it; a backend without a family stays generic."""
    if not sel.any():
        return
    from simulator.calibration.fit_regimes import attention_ops

    d = df.assign(context=_num(df, ctx_col, 1), q_rows=_num(df, "q_rows", 1))
    generic = sel & fit_rows(df, "decode_attn")
    family = sdpa_family(df["backend"])
    generic |= sel & (family == "")
    attention_ops(b, d, generic, None, sms)
    for f in sorted(set(family[sel & ~generic])):
        attention_ops(b, d, sel & ~generic & (family == f), f, sms)




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
FIT_ORDER = ("copy", "gemm", "elementwise", "decode_attn", "paged_attn")


def predict_us(ops, hw: HardwareSpec, eff: Efficiency, families: np.ndarray) -> np.ndarray:
    """Predicted time per measured row (µs), pricing each row's ops as isolated back-to-back kernels."""
    t = price(ops, hw.with_efficiency(eff), "graph")
    return np.bincount(ops.setting, weights=t, minlength=ops.n_settings) * 1e6


def fit(df: pd.DataFrame, hw: HardwareSpec, complete: bool = True) -> tuple[Efficiency, dict]:
    """Fit every family on its non-held-out rows, starting from `hw`'s datasheet values (spec_for) and the
    uncalibrated Efficiency: nothing from an earlier fitted file enters (D16). Terms other campaigns own
    stay at their uncalibrated values here (compute.attention: fit_prefill; topk_cta: fit_topk_cta; the
    interconnect: fit_links) - decode rows cannot identify compute.attention (one query row: the kernel
    is bandwidth-bound; at 4 flop/byte its compute term changes a decode row's price by < 0.01 %).
    Returns the Efficiency and fit metadata; meta['fitted_kinds'] lists the op kinds set. `complete` (what
    `sparsesim calibrate fit` uses): refuse data that lack a family of FIT_ORDER or the launch rows, instead of
    leaving those terms uncalibrated in a file that would then be used as a whole fit."""
    ops = build_ops(df, hw.units)
    hold = holdout_mask(df)
    has_ops = np.bincount(ops.setting, minlength=len(df)) > 0
    fam = df["family"].to_numpy()
    meas = df["median_us"].to_numpy()
    file = df.attrs.get("file", "")
    launch = df[df["family"] == "launch"].groupby("op_kind")["median_us"].median()
    eff = Efficiency(source="")
    eff = replace(eff, launch_graph_s=float(launch["launch_graph"]) * 1e-6 if "launch_graph" in launch else None,
                  launch_eager_s=float(launch["launch_eager"]) * 1e-6 if "launch_eager" in launch else None)
    C.check_physical({f"launch_us.{k}": v * 1e6 for k, v in (("graph", eff.launch_graph_s),
                                                            ("eager", eff.launch_eager_s)) if v is not None}, file)
    hw_l = replace(hw, launch_graph_s=eff.launch_graph_s or hw.launch_graph_s,
                   launch_eager_s=eff.launch_eager_s or hw.launch_eager_s)
    meta: dict = {"fitted_kinds": []}
    missing = [f for f in FIT_ORDER if not (fit_rows(df, f) & ~hold & has_ops).any()]
    missing += [k for k in ("launch_graph", "launch_eager") if k not in launch]
    if missing and complete:
        raise C.CalibrationError(f"has no fit rows of {', '.join(missing)}: `calibrate fit` sets every family's terms "
                                 f"({', '.join(FIT_ORDER)} and the launch costs) from one measure.py campaign; a fit "
                                 "without them would leave those terms at the datasheet peaks (a CSV cut short?)",
                                 file=file, field="family")
    for family in FIT_ORDER:
        rows = fit_rows(df, family) & ~hold & has_ops
        params = [p for p in FAMILY_PARAMS[family] if p[0] != "compute.attention"]
        if family == "gemm" and not (rows & df["dtype"].astype(str).str.contains("8").to_numpy()).any():
            params = [p for p in params if p[0] != "compute_dtype.fp8"]  # no fp8 rows: not identified
        if not rows.any():
            meta[family] = {"rows": 0}
            continue
        need = max(3, 2 * len(params))
        if rows.sum() < need:
            raise C.CalibrationError(f"{family}: {int(rows.sum())} fit row(s) for {len(params)} parameters; a fit "
                                     f"needs at least {need} (measure.py writes {family} rows over whole shape "
                                     f"families)", file=file)
        names = [p[0] for p in params]
        x0 = np.array([p[1] for p in params])
        lo, hi = np.array([p[2] for p in params]), np.array([p[3] for p in params])

        def resid(x, rows=rows, names=names):
            e = efficiency_with(eff, dict(zip(names, x)))
            return np.log(predict_us(ops, hw_l, e, fam)[rows] / meas[rows])

        if not np.all(np.isfinite(resid(x0))):
            raise C.CalibrationError(f"{family}: the model gives no finite time for some fit rows (shape columns "
                                     f"inconsistent with the family?)", file=file)
        r = least_squares(resid, x0, bounds=(lo, hi), x_scale="jac")
        eff = efficiency_with(eff, dict(zip(names, r.x)))
        meta[family] = {"rows": int(rows.sum()), "params": {n: float(v) for n, v in zip(names, r.x)},
                        "rms_log_error": float(np.sqrt(np.mean(r.fun ** 2)))}
        meta["fitted_kinds"].append(FAMILY_KIND[family])
    if not meta["fitted_kinds"]:
        raise C.CalibrationError("has no rows the fit can use (families copy, gemm, elementwise, decode_attn with "
                                 f"backend {ATTN_BACKEND}, paged_attn gathers, topk)", file=file)
    return eff, meta


def fitted_params(eff: Efficiency, meta: dict) -> dict[str, float]:
    """The parameters this fit sets, as 'part.key' -> value in the fitted file's units (for the checks)."""
    out = {}
    for family in FIT_ORDER:
        for name, v in (meta.get(family) or {}).get("params", {}).items():
            out[name] = v
    for k, v in (("graph", eff.launch_graph_s), ("eager", eff.launch_eager_s)):
        if v is not None:
            out[f"launch_us.{k}"] = v * 1e6
    return out


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
    ops = build_ops(df, hw.units)
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
    # torch's own RMSNorm: its kernel's form (simulator.calibration.torch_rmsnorm.shipped_us: grid 3's rmsnorm3_us,
    # shipped after its blind grid 3), whose constants were fitted on H100 rows (the campaign's and grids 1-2's): those
    # rows are `looked-at`, other devices' `transfer`; a row's input warmth follows its recorded rotation sets
    rms = has & (df["family"].to_numpy() == "elementwise") & (df["op_kind"].to_numpy() == "rmsnorm")
    if rms.any():
        from simulator.calibration import torch_rmsnorm as TR

        rows_, n_ = _num(df, "batch", 1)[rms], _num(df, "n", 0)[rms]
        sets = _num(df, "rotation_sets", 0)[rms]
        sets = np.where(sets > 0, sets, TR.harness_sets(rows_, n_))
        out.loc[rms, "predicted_us"] = TR.shipped_us(rows_, n_, sms=hw.units, l2_bytes=(hw.l2_bytes or TR.H100_L2),
                                                     hbm_bps=hw.hbm_bw_bytes_s, sets=sets)
        out.loc[rms, "part"] = TR.report_part(hw.name)
    out["ape_pct"] = (out["predicted_us"] / out["median_us"] - 1).abs() * 100
    # torch.topk's terms belong to fit-regimes (module docstring): its rows here are checked there
    return out[has & (df["family"].to_numpy() != "topk")].reset_index(drop=True)


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
def fitted_doc(eff: Efficiency, meta: dict, hw: HardwareSpec, data_file: str) -> dict:
    """The part of a fitted file this fit owns."""
    kinds = meta["fitted_kinds"]
    p = fitted_params(eff, meta)

    def pick(part: str, digits: int = 4) -> dict:
        return {k.split(".", 1)[1]: round(v, digits) for k, v in p.items()
                if k.startswith(part + ".") and k.split(".", 1)[1] in kinds}

    doc = {
        "source": f"fitted by simulator/calibration/fit.py to {DF.name(data_file)} (measured on {hw.name}; its "
                  "held-out errors are listed in this file)",
        "device": hw.name,
        "data": DF.name(data_file),
        "compute": pick("compute"),
        "memory": pick("memory"),
        "compute_dtype": {k.split(".", 1)[1]: round(v, 4) for k, v in p.items() if k.startswith("compute_dtype.")},
        "fixed_us": pick("fixed_us", 3),
        "sync_us": pick("sync_us", 3),
        "saturation": pick("saturation"),
        "launch_us": {k.split(".", 1)[1]: round(v, 3) for k, v in p.items() if k.startswith("launch_us.")},
        "fit": {k: v for k, v in meta.items() if k != "fitted_kinds"},
    }
    if "overlap_p" in p:
        doc["overlap_p"] = round(p["overlap_p"], 4)
    return doc


def owned_keys(meta: dict) -> dict:
    """checks.merge_into's ownership map for a fit that set meta['fitted_kinds']."""
    kinds = tuple(meta["fitted_kinds"])
    own: dict = {part: kinds for part in ("memory", "fixed_us", "sync_us", "saturation")}
    own["compute"] = tuple(k for k in kinds if k != "attention")  # compute.attention belongs to fit-prefill
    if "gemm" in kinds:
        own.update({"compute_dtype": ("fp8",), "overlap_p": None})
    own["launch_us"] = ("graph", "eager")
    return own


def _doc_for(eff: Efficiency, meta: dict, hw: HardwareSpec, data_file: str, out_dir: Path) -> tuple[Path, dict]:
    p = Path(out_dir) / f"{hw.name}.yaml"
    return p, C.merge_into(p, fitted_doc(eff, meta, hw, data_file), owned_keys(meta))


def merged_efficiency(eff: Efficiency, meta: dict, hw: HardwareSpec, data_file: str, out_dir: Path) -> Efficiency:
    """The efficiency the written file will hold: this fit merged with what other fits own in out_dir's file
    (prices the rows that use other campaigns' terms, e.g. verification attention's compute)."""
    from hwmodels.spec import efficiency_from_dict

    p, doc = _doc_for(eff, meta, hw, data_file, out_dir)
    return efficiency_from_dict(C.plain(doc), str(p))


def write_fitted(eff: Efficiency, meta: dict, hw: HardwareSpec, data_file: str, table: pd.DataFrame,
                 e2e: pd.DataFrame, out_dir: Path) -> Path:
    """Merge this fit into out_dir/<device>.yaml (other fits' terms in that file are kept), validate, write."""
    p, doc = _doc_for(eff, meta, hw, data_file, out_dir)
    doc["errors_pct"] = [{k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()}
                         for r in table.to_dict("records")]
    doc["end_to_end"] = [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}
                         for r in e2e.to_dict("records")]
    return C.write_checked(p, doc, "# Fitted roofline efficiencies. Regenerate: sparsesim calibrate fit "
                                   f"<data>/{DF.name(data_file)} --device {hw.name} --fitted-dir <this folder>\n")


def fitted_efficiency(hw_name: str) -> Efficiency:
    from hwmodels.spec import load_efficiency

    return load_efficiency(hw_name)


def latest_data_files() -> list[Path]:
    """The committed measurement CSVs, newest per device."""
    files = sorted(DF.glob(DATA_DIR, "*.csv"))
    # measure.py CSVs only: the collectives, latency and single-CTA top-k campaigns have their own fits
    return [f for f in files if not DF.stem(f).endswith("_quick") and "_collectives_" not in DF.stem(f)
            and not DF.stem(f).startswith(("latency_", "topk_cta_", "prefill_attn_", "hf_decode_", "regimes_",
                                       "graph_chains_", "graph_trace_", "eager_host_",
                                       "quest_prefill_runs_"))]
