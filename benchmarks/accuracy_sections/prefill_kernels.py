"""Prefill rows of the production attention kernels (lab/kernels/measure_prefill_kernels.py, 1 x H100): FA3's hopper/
binary and FlashInfer's FA2 paged prefill, causal, B requests of P new tokens after O cached ones. Every grid was
priced and committed before it ran (lab/kernels/predict_prefill_kernels.py):

  product         the dense strategy's generic prefill op (what every kernel choice paid before; cuDNN-fitted rate)
  family          the family's launches as written for decode / verification (no causal bound)
  family_causal   the same launches with each query tile's keys bounded by its diagonal, read from prefill.cuh and
                  hopper/ block.h before the measurement: the product's prefill price for kernel fa3 / fa4 / flashinfer
                  / fi_tc / fi_decode since (simulator/kernels/families.py gqa_prefill_launches)

Regimes: K/V dtype x (fresh prompt O = 0, chunked O > 0); goal median <= 10 %, p90 <= 25 %. The grid's role column
('fit' = Llama-3.1-8B's heads, 'held_out' = three other models') was fixed before any row ran; nothing here is fitted."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from hwmodels import datafiles as DF
from simulator.calibration.scoreboard import BOARD, models_table

DATA = Path(__file__).resolve().parents[2] / "hwmodels" / "calibration" / "data" / "production_attention"
KEYS = ["family", "model", "dtype", "batch", "q_rows", "prefix"]
LABELS = ("product", "family", "family_causal")
FAMILY = {"fa3_prefill": "fa3 prefill", "fi_prefill": "fi prefill"}


def load(grid: str = "", data_dir: Path = DATA) -> pd.DataFrame:
    """The newest measured prefill grid (`grid` '' = the first look, 'blind2' = ...) joined with its committed prices
    (<label>_err_pct, %); empty when either file is missing."""
    fs = sorted(p for p in DF.glob(Path(data_dir), f"prefill_kernels{grid}_nvidia-*.csv")
                if DF.suffix(p) == ".csv" and "_grids" not in p.name)
    pf = DF.resolve(Path(data_dir) / ("prefill_kernels_first_look.csv" if not grid else
                                      f"prefill_kernels{grid}_predictions.csv"))
    if not fs or not pf.is_file():
        return pd.DataFrame()
    m = pd.read_csv(fs[-1])
    m = m[np.isfinite(pd.to_numeric(m["median_us"], errors="coerce"))]
    p = pd.read_csv(pf, dtype={"model_commit": str, "main_commit": str})
    pred = [c for c in p.columns if c.startswith("pred_")]
    extra = [c for c in ("main_commit", "ship_rule") if c in p.columns]
    b = m.merge(p[KEYS + ["role"] + pred + ["model_commit"] + extra], on=KEYS, how="inner", suffixes=("", "_p"))
    for c in pred:
        b[c[5:-3] + "_err_pct"] = (b[c] / b["median_us"] - 1.0) * 100.0
    b["regime"] = b["family"].map(FAMILY) + ": " + b["dtype"] + ", " + np.where(b["prefix"] > 0, "chunked (O > 0)",
                                                                                "fresh (O = 0)")
    b.attrs["file"] = fs[-1].name
    return b


def prefill_kernels(fmt: dict | None = None) -> None:
    """Print the first-look grid per regime and role, and add it to the summary board."""
    fmt = fmt or {"index": False, "float_format": lambda v: f"{v:.1f}"}
    b = load()
    if not len(b):
        return
    r0 = b.iloc[0]
    print(f"\nPREFILL ROWS OF THE PRODUCTION KERNELS ({b.attrs['file']}: {len(b)} rows; {r0['device']}, {r0['library']}), "
          f"the FIRST LOOK: every price committed before the measurement (prefill_kernels_first_look.csv, model at "
          f"{r0['model_commit']}): product = the dense strategy's generic prefill op; family = the family's launches "
          "as written for decode; family_causal = with each query tile's keys bounded by its diagonal (prefill.cuh, "
          "hopper/ block.h: the product's price since); |model/measured - 1| median / p90, signed median, %")
    t = models_table(b, ("regime",), LABELS, LABELS)
    print(t.to_string(**fmt))
    tr = models_table(b, ("regime", "role"), ("family_causal",), ("family_causal",))
    print("by the role fixed before the run (fit = Llama-3.1-8B's heads, held_out = three other models; nothing "
          "fitted here):")
    print(tr.to_string(**fmt))
    for fam, lab in FAMILY.items():
        g = b[b["family"] == fam]
        tt = t[t["regime"].str.startswith(lab)]
        for k, what in (("product", "the product's generic prefill op"), ("family", "the family's launches as "
                        "written"), ("family_causal", "the family's launches with the causal bound (from source)")):
            BOARD.add(lab, "first look", f"prefill grid 1, {what}, priced before measuring", g[f"{k}_err_pct"],
                      int((tt[f"{k}_goal"] == "met").sum()), len(tt))
        BOARD.add(lab, "blind", "prefill grid 1 (first look), the causal bound (shipped after it)",
                  g["family_causal_err_pct"], int((tt["family_causal_goal"] == "met").sum()), len(tt))
    grids = [(g, load(f"_blind{g[0]}")) for g in BLIND_GRIDS]
    newest = {fam: n for (n, *_), b in grids if len(b) for fam in set(b["family"])}   # the last grid with its rows
    for grid, b in grids:
        prefill_blind(grid, b, fmt, newest)


#: the blind grids after the first look: (suffix, what its rows are, main's description, the candidate's, the family
#: the candidate moved, whether the candidate shipped and holds that family's STANDING row, whether main holds the other
#: family's STANDING row there). Each was priced by main and the candidate, both committed before its call with the
#: ship rule, the product's old generic op beside them. The STANDING row of a family is its newest grid's shipped model
BLIND_GRIDS = (
    ("2", "rows on four models of no grid-1 row", "the causal bound as shipped",
     "+ FlashInfer's in-order dispatch tail", "fi_prefill", "the in-order dispatch tail (shipped)", True),
    ("3", "rows on four models of no earlier row", "the model shipped after grid 2", "+ FA3's prefill tile terms",
     "fa3_prefill", "FA3's prefill tile terms (shipped)", True),
    ("4", "FlashInfer rows, short prefills its plan splits", "the model shipped after grid 3",
     "+ the merge's per-item SM time", "fi_prefill", "the merge's per-item SM time (shipped)", True),
    ("5", "FA3 rows of 1.3-3.7 rounds of its persistent CTAs, five new models, on the lent H200 (the H100-SXM's "
     "terms through the H200's unmeasured_kinds_from)", "the model shipped after grid 4",
     "+ FA3's longest-first schedule (read from hopper/ tile_scheduler.hpp, nothing fitted)", "fa3_prefill",
     "FA3's longest-first schedule (shipped)", True),
)


def prefill_blind(grid: tuple, b: pd.DataFrame, fmt: dict, newest: dict) -> None:
    """One blind grid of BLIND_GRIDS (b: its rows, load()): per regime product / main / new, a line per family, and the
    board's entries (the candidate's family gets main and new; the other family, where it has rows, main, which the
    candidate priced the same); `newest`: each family's newest grid, whose shipped model is its STANDING row."""
    n_, rows, main_is, new_is, moved, new_label, shipped = grid
    if not len(b):
        return
    r0 = b.iloc[0]
    print(f"\nPREFILL BLIND GRID {n_} ({b.attrs['file']}: {len(b)} {rows}; {r0['device']}), priced before the call "
          f"(prefill_kernels_blind{n_}_predictions.csv): main = {main_is} ({r0['main_commit']}), new = {new_is} "
          f"({r0['model_commit']}; the other family's rows the same), product = the generic prefill op; ship rule: "
          f"{r0['ship_rule']}")
    t = models_table(b, ("regime",), ("product", "main", "new"), ("product", "main", "new"))
    print(t.to_string(**fmt))
    for fam, lab in FAMILY.items():
        g = b[b["family"] == fam]
        if not len(g):
            continue
        tt = t[t["regime"].str.startswith(lab)]
        print(f"{lab}, blind grid {n_}: " + "; ".join(
            f"{k} {np.median(g[k + '_err_pct'].abs()):.1f} / {np.percentile(g[k + '_err_pct'].abs(), 90):.1f} %, "
            f"{int((tt[k + '_goal'] == 'met').sum())} of {len(tt)}" for k in ("product", "main", "new")))
        cand = fam == moved
        main_ships = not (cand and shipped)
        BOARD.add(lab, "blind", f"prefill blind grid {n_}, main" + (" (shipped)" if main_ships else ""),
                  g["main_err_pct"], int((tt["main_goal"] == "met").sum()), len(tt),
                  standing=main_ships and newest.get(fam) == n_)
        if cand:
            BOARD.add(lab, "blind", f"prefill blind grid {n_}, + {new_label}", g["new_err_pct"],
                      int((tt["new_goal"] == "met").sum()), len(tt), standing=shipped and newest.get(fam) == n_)
