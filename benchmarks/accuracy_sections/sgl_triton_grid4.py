"""SGLang's Triton decode kernel (sgl_triton), blind grid 4 (lab/kernels/sgl_triton_blind4.py): 44 shapes in none of
the committed rows (bf16 long contexts at batch 1-40, bf16 middle contexts at batch 2-320, fp8 short contexts at batch
6-600, controls; heads 32/8, 64/8, 28/4) and 6 diagnosis rows (lone programs of four head layouts), measured in one
device call. Prices committed before the measurement (sgl_triton_blind4_predictions.csv): base = main's model, new =
the bf16 kind's K/V stream at attn_fa2's measured rate and the stage-1 / stage-2 constants at 0, refitted on the
family's fit rows (fit_production_attention SGL_MEMORY_FROM, SGL_FIXED_ZERO). The diagnosis rows showed the binary
compiled for GQA group 7 walking its lone chain 20 % faster than group 4's; that ratio, measured on them, is the model
shipped (simulator/kernels/triton_engines.py SGL_ITER_BY_G), LOOKED-AT on grid 4 and tested on blind grid 5
(lab/kernels/sgl_triton_blind5.py: 26 shapes, G 7 / G 5 heads and controls; prices committed before its call,
sgl_triton_blind5_predictions.csv: base = main's model, v1 = grid 4's new model, new = v1 + SGL_ITER_BY_G). Each row's
time is the smaller of the call's two runs. Regime goal: median <= 10 %, p90 <= 25 %."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration import fit_production_attention as FP
from simulator.calibration.scoreboard import BOARD, models_table

PRED = "sgl_triton_blind4_predictions.csv"
GLOB = "sgl_triton_blind4_nvidia*.csv"
PRED5 = "sgl_triton_blind5_predictions.csv"
GLOB5 = "sgl_triton_blind5_nvidia*.csv"
KEYS = ("family", "model", "dtype", "heads", "kv_heads", "head_dim", "batch", "q_rows", "context", "page_size", "row_role")
#: the label of grid 5's prices that the product ships (its STANDING row: the shipped model's newest blind grid)
SHIPPED = "new"
#: what the grid shows where its regimes miss under the shipped model (printed while they miss)
DIAGNOSIS = (
    "bf16 long contexts at batch 1-10 of G 7 heads +15..+20 % where 160-320 programs put two or three on some SMs (one "
    "per SM: +7..+12 %): the model adds each co-resident program's issue to the lone chain, while the measured launches "
    "hide most of it (Llama-3.1-8B at batch 4 x 65536, two programs per SM, runs as fast as at batch 1); the G 5 binary "
    "(40/8 heads, priced as G 4's) walks its lone chain ~16 % faster too (+30 % at batch 2 x 80000): a per-binary "
    "ratio is measured for G 7 only")


def _measured(data_dir: Path, glob: str = GLOB) -> pd.DataFrame:
    """The newest measured file of `glob`; with its repeat (the same rows timed again in the same call, the file's stem
    + "_repeat" after the grid's name) each row's time is the smaller of the two medians (the rule of the fa3 family's
    repeat, fit_production_attention.load_fa3: interference only adds time; first_us keeps the first run's median)."""
    fs = sorted(p for p in DF.glob(Path(data_dir), glob) if "_grids" not in p.name and "smi" not in p.name
                and "_repeat" not in p.name)
    if not fs:
        return pd.DataFrame()
    d = FP.load(fs[-1])
    d["first_us"] = d["median_us"]
    rep = DF.resolve(fs[-1].with_name(DF.name(fs[-1]).replace("_nvidia", "_repeat_nvidia", 1)))
    if rep.is_file():
        r = FP.load(rep)
        k = ["model", "dtype", "batch", "context", "row_role"]
        d = d.merge(r[k + ["median_us"]].rename(columns={"median_us": "repeat_us"}), on=k, how="left")
        d["median_us"] = np.fmin(d["median_us"], d["repeat_us"])
    d.attrs["file"] = fs[-1].name
    return d


def load(data_dir: Path = FP.DATA_DIR, grid: int = 4) -> pd.DataFrame:
    """Grid 4's (or 5's) measured rows joined with the prices committed before its call (base_err_pct, new_err_pct;
    grid 5 also v1_err_pct), with regime labels; empty when either is missing."""
    glob, pred = (GLOB, PRED) if grid == 4 else (GLOB5, PRED5)
    m = _measured(data_dir, glob)
    pf = DF.resolve(Path(data_dir) / pred)
    if not len(m) or not pf.is_file():
        return pd.DataFrame()
    errs = dict(FP.BLIND_ERRORS)
    extra = ("model_commit", "base_commit")
    if grid != 4:
        errs["pred_v1_us"] = "v1_err_pct"
        extra += ("v1_commit",)
    out = FP.join_prices(m, pd.read_csv(pf), list(KEYS), errs, extra)
    out.attrs["file"] = m.attrs["file"]
    return out


def _pooled(blind, t, labels, names, grid: int, standing: str | None) -> None:
    for lab in labels:
        e = blind[f"{lab}_err_pct"]
        met = int((t[lab + "_goal"] == "met").sum())
        stage = "looked-at" if lab == "now" else "blind"
        BOARD.add("sgl_triton", stage, f"sgl_triton blind grid {grid}, {names[lab]}", e, met, len(t),
                  standing=lab == standing)
        print(f"sgl_triton blind {grid}, {lab}: median |error| {np.median(e.abs()):.1f} %, p90 "
              f"{np.percentile(e.abs(), 90):.1f} %, signed {np.median(e):+.1f} %; regimes met {met} of {len(t)}")


def section(data_dir: Path, fmt: dict) -> None:
    """Print blind grids 4 and 5's regime tables and grid 4's diagnosis rows, and add the board rows (grid 5's shipped
    model is the family's STANDING)."""
    from hwmodels.spec import load_hardware

    from .attention import now_err

    b = load(data_dir)
    if not len(b):
        return
    hw = load_hardware("H100-SXM")
    blind = b[b["row_role"] == "blind"].reset_index(drop=True)
    blind["now_err_pct"] = now_err(FP, hw, blind)
    print(f"\nSGL_TRITON BLIND 4 ({b.attrs['file']}: {len(blind)} sgl_triton shapes in none of the committed rows: bf16 "
          "long contexts at batch 1-40, bf16 middle at batch 2-320, fp8 short at batch 6-600, controls; heads 32/8, "
          f"64/8, 28/4), prices committed before the measurement ({PRED}): base = main's model "
          f"({str(b['base_commit'].iloc[0])[:7]}), new = {str(b['model_commit'].iloc[0])[:7]} (the bf16 kind's K/V "
          "stream at attn_fa2's measured rate, stage-1 / stage-2 constants 0, refitted on the fit rows); now = the "
          "shipped model (new + SGL_ITER_BY_G, measured on this call's diagnosis rows: LOOKED-AT)")
    by = ("kv", "ctx_regime", "batch_regime")
    t = models_table(blind, by, ("base", "new", "now"), ("base", "new", "now"))
    print(t.round(1).to_string(**fmt))
    _pooled(blind, t, ("base", "new", "now"), {"base": "main's model's committed prices", "new": "the new model's "
            "committed prices", "now": "the shipped model (its G 7 ratio measured in this call)"}, 4, None)
    d = b[b["row_role"] == "diagnosis"].reset_index(drop=True)
    if len(d):
        d = d.assign(G=d["heads"] / d["kv_heads"], us_per_tile=d["median_us"] / np.ceil(d["context"] / 8.0 / 32.0))
        print("diagnosis (not blind; the fit rows of SGL_ITER_BY_G): lone programs, batch 2, context 65536 (8 splits "
              "of 256 32-key tiles, at most one program per SM), by head layout; us_per_tile = median / 256:")
        print(d[["model", "heads", "kv_heads", "G", "dtype", "median_us", "us_per_tile", "base_err_pct",
                 "new_err_pct"]].round(2).to_string(**fmt))
    b5 = load(data_dir, 5)
    if not len(b5):
        return
    print(f"\nSGL_TRITON BLIND 5 ({b5.attrs['file']}: {len(b5)} sgl_triton shapes in none of the committed rows: G 7 "
          "heads (28/4, 56/8) bf16 at batch 1-120 and fp8, G 5 heads (40/8, priced as G 4's binary), G 4 / G 8 "
          f"controls), prices committed before the measurement ({PRED5}): base = main's model "
          f"({str(b5['base_commit'].iloc[0])[:7]}), v1 = grid 4's new model ({str(b5['v1_commit'].iloc[0])[:7]}), "
          f"new = v1 + the G 7 binary's lone iteration ({str(b5['model_commit'].iloc[0])[:7]}, SGL_ITER_BY_G)")
    t5 = models_table(b5, by, ("base", "v1", "new"), ("base", "v1", "new"))
    print(t5.round(1).to_string(**fmt))
    _pooled(b5, t5, ("base", "v1", "new"), {"base": "main's model's committed prices", "v1": "grid 4's new model's "
            "committed prices", "new": "the new model's committed prices (shipped until grid 6)"}, 5, None)
    g = b5.assign(G=(b5["heads"] / b5["kv_heads"]).astype(int))
    print("by GQA group (|error| median, signed median, n):")
    print(g.groupby("G").agg(n=("new_err_pct", "size"), base_med=("base_err_pct", lambda x: x.abs().median()),
                             v1_med=("v1_err_pct", lambda x: x.abs().median()),
                             new_med=("new_err_pct", lambda x: x.abs().median()),
                             new_sgn=("new_err_pct", "median")).round(1).to_string())
    if (t5[SHIPPED + "_goal"] == "MISSED").any():
        print(f"  missed (sgl_triton blind 5): {DIAGNOSIS}")
