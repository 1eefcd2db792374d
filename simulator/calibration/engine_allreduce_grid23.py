"""Blind grid 23 of the engines' all-reduce kernels on 4 x H100: 4 ranks AND 2 ranks, every one of the 31 (implementation,
ranks, size regime) cells, protocol B only (lab/kernels/measure_engine_allreduce.py v20 --grid blind23, 21 replays x 40
calls; lab/kernels/run_engine_allreduce_blind23.sh), plus a 2-rank diagnostic at 12-30 MiB (BLIND23_DIAG, outside the 31
cells: the 2-rank Lamport one-shot's rows there are reported, they do not count).

Why (grid 22, simulator/calibration/engine_allreduce_grid22.py): under protocol B (the STANDING protocol) the shipped model
(GRID22_H100_RULES) misses 3 cells, all > 1 MiB and all priced ~10 % too slow (vLLM's one-shot 2 ranks +11.0 % signed,
vLLM's two-shot 4 ranks +10.2 %, the plain Lamport one-shot 4 ranks +10.0 %), and the other 4-rank > 1 MiB cells sit at
+6 to +9 %. The link shares that set the > 1 MiB slope (fit_production_allreduce's link ceiling, grids 13-19's rules) were
fitted on protocol-A rows, which carry the harness's per-replay skew s / 10 above 1 MiB (s / 40 at or below): 2.3-3.3 us
of 25-37 us at 4 ranks.

Structure (source: flashinfer 0.6.4 = flashinfer-ai/flashinfer @ f1e6fdcb): above 1 MiB every engine kernel's time is its
link phase -- vllm_custom_all_reduce.cuh cross_device_reduce_1stage (2 ranks: one grid-stride loop of 16-B loads from the
one peer between two flag barriers), cross_device_reduce_2stage (4 ranks >= 512 KiB: the reduce-scatter loop of peer loads,
then the all-gather loop), trtllm_allreduce_fusion.cuh allreduce_fusion_kernel_oneshot_lamport (posted st into every
peer's buffer, then the poll) and allreduce_fusion_kernel_twoshot_sync (peer loads / stores plus its local copies). The
barriers and phases are per call and size-free (grid 21: nothing changes in the kernels at 1 MiB). So the candidate
changes only link terms, with two new engine-only keys (hwmodels.spec ENGINE_AR_RULES, hwmodels.roofline
AR_ONESHOT2_LINK / AR_MULTI_LINK_TIME, default off, honoured only where Efficiency.engine_ar is set):
    oneshot2_link    vLLM's one-shot at 2 ranks: its one peer's loads at this share of the datasheet link rate (as grid
                     20's lamport2_link does for the Lamport push), in place of the shared link / memory shares;
    multi_link_time  every engine kernel above 2 ranks: its link time times this share (one scale for all six kinds at
                     4 ranks: the shares they share were fitted on the same protocol-A rows).
Grid 22's shipped rules are kept (the 2-rank Lamport trio, twoshot2_link, oneshot_peer_share, first_fill_extra).

Fit (fit_grid23_h100_rules; looked-at rows only): every H100 row measured before grid 23 (engine_allreduce_grid20.H100_GLOB,
all hosts; predictions, WRONG rows and grid 21's / 22's protocol-A files -- their rows are in the B files -- left out),
each protocol-A row corrected to protocol B: t_B = t_A - s x (1/calls - 1/40) for calls < 40 and bytes <= 16 MiB, with
s per rank count S_WORLD = the median (A - B) / (1/10 - 1/40) over the > 1 MiB rows of grids 21-22 (skew_values(): 2 ranks
30.9 us = grid 21's 66 rows + grid 22's 2-rank 39 rows pooled, 4 ranks 35.5 us = grid 22's 40 rows); grids 21-22's B rows
enter as measured. Each key by a bounded 1-D least squares on log(model / measured) over the rows 1-16 MiB it touches
(oneshot2_link: vLLM one-shot 2 ranks; multi_link_time: every engine kind at 4 ranks).

Models priced (BLIND23_PRED_CSV, committed before the call):
    main = the H100 as shipped at BLIND23_MAIN_COMMIT (GRID22_H100_RULES);
    new  = GRID23_H100_RULES (the candidate).
Ship rule (common rules, protocol B): new ships only if it meets MORE of the 31 cells than main, or as many with a lower
pooled |error| median AND p90; else main stays and GRID23_H100_RULES stays a named, not-shipped constant.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

#: (tokens, hidden) in no earlier grid (earlier_shapes23), each at 4 AND 2 ranks: 7 at <= 64 KiB (tokens > 4), 8 at
#: 64-512 KiB, 8 at 512 KiB-1 MiB, 11 at 1-8 MiB (1.1-6.1 MiB: >= 8 rows in each cell grid 22 missed), the regimes
#: interleaved so that a run cut short drops rows in every cell
BLIND23_SMALL = ((11, 1024), (18, 1024), (12, 1280), (8, 1536), (7, 1280), (9, 1024), (16, 1024))
BLIND23_MIDDLE = ((43, 3072), (61, 2560), (17, 7168), (35, 5120), (47, 4608), (25, 8192), (73, 1536), (23, 4096))
BLIND23_UPPER = ((57, 5120), (69, 4608), (85, 3584), (43, 8192), (101, 4096), (63, 7168), (119, 3584), (81, 6144))
BLIND23_LARGE = ((93, 6144), (157, 4096), (109, 7168), (187, 5120), (241, 4608), (143, 8192), (311, 5120), (267, 7168),
                 (389, 6144), (301, 8192), (445, 7168))


def _interleave(*groups):
    out, n = [], max(len(g) for g in groups)
    for i in range(n):
        out += [g[i] for g in groups if i < len(g)]
    return tuple(out)


BLIND23_SHAPES = _interleave(BLIND23_LARGE, BLIND23_SMALL, BLIND23_MIDDLE, BLIND23_UPPER)
#: the 2-rank diagnostic (outside the 31 cells; measured last): 12-30 MiB, the regime where grid 22's lamport2_link prices
#: the earlier campaign's forced 2-rank Lamport one-shots ~14 % too fast
BLIND23_DIAG = ((768, 8192), (1100, 7168), (1500, 6144), (1900, 8192))
BLIND23_WORLDS = (4, 2)
PROTOCOL = "B"
#: calls a replay (protocol B: 40 up to 16 MiB, 4 above) and replays
CALLS_B, REPS_B = 40, 21
BLIND23_PRED_CSV = "engine_allreduce_blind23_prediction_H100-SXM_2026-11-28.csv"
BLIND23_MEAS_GLOB = "engine_allreduce_blind23B_nvidia-h100*.csv"
#: main's commit (the H100 as shipped, GRID22_H100_RULES) the prediction prices
BLIND23_MAIN_COMMIT = "193e61d"
#: the per-replay cost s (us) per rank count: skew_values() rounded (the correction of protocol-A rows to B)
S_WORLD = {2: 30.9, 4: 35.5}


def calls_b(nbytes) -> np.ndarray:
    n = np.asarray(nbytes, float)
    return np.where(n <= (1 << 24), CALLS_B, 4)


def earlier_shapes23() -> set:
    """Every (tokens, hidden) an earlier grid measured (campaign, blind 4, 6-22)."""
    from simulator.calibration import engine_allreduce_grid22 as G22

    return G22.earlier_shapes22() | set(G22.BLIND22_SHAPES)


def blind23_grid(diag: bool = True) -> pd.DataFrame:
    """Blind grid 23's rows: BLIND23_SHAPES at 4 and 2 ranks, BLIND23_DIAG at 2 (diag=True; column `diag`)."""
    from simulator.calibration import engine_allreduce as EA

    df = EA.grid(BLIND23_WORLDS, list(BLIND23_SHAPES)).assign(diag=False)
    if diag:
        df = pd.concat([df, EA.grid((2,), list(BLIND23_DIAG)).assign(diag=True)], ignore_index=True)
    return df


def skew_values() -> dict:
    """s per rank count (us): the median (A - B) / (1/10 - 1/40) over the > 1 MiB rows of grids 21 (2 ranks) and 22 (2 and
    4 ranks), pooled per rank count; with the rows' count."""
    from simulator.calibration import engine_allreduce_grid21 as G21
    from simulator.calibration import engine_allreduce_grid22 as G22

    r21, r22 = G21.load_blind21(), G22.load_blind22()
    h21, h22 = r21[r21["bytes"] > 1 << 20], r22[r22["bytes"] > 1 << 20]
    s2 = pd.concat([h21["s_us"], h22[h22["world"] == 2]["s_us"]])
    s4 = h22[h22["world"] == 4]["s_us"]
    return {2: (float(s2.median()), len(s2)), 4: (float(s4.median()), len(s4))}


def h100_rows_as_b23(world: int, data_dir: Path | None = None, names=None) -> pd.DataFrame:
    """Every H100 row measured BEFORE grid 23 at `world` ranks (engine_allreduce_grid20.H100_GLOB files of every host;
    predictions, WRONG rows, grids 21's / 22's protocol-A files and grid 23 left out), each protocol-A row corrected to
    protocol B: median_us - S_WORLD[world] x (1/calls - 1/40) where calls < 40 and bytes <= 16 MiB (not in the B files);
    median_a_us keeps the measured value. `names` keeps only those files."""
    from hwmodels import datafiles as DF
    from simulator.calibration import engine_allreduce as EA
    from simulator.calibration.engine_allreduce_grid20 import H100_GLOB

    d = EA.DATA_DIR if data_dir is None else Path(data_dir)
    parts = []
    for p in DF.glob(d, H100_GLOB):
        name = Path(p).name
        if ("prediction" in name or "blind21A" in name or "blind22A" in name or "blind23" in name
                or (names is not None and name not in names)):
            continue
        m = pd.read_csv(p)
        if "median_us" not in m or "calls" not in m:
            continue
        parts.append(m.assign(file=name))
    v = pd.concat(parts, ignore_index=True)
    v = v[~v["note"].astype("string").fillna("").str.contains("WRONG") & v["impl"].isin(list(EA.IMPL_KIND))]
    v = v[v["world"] == world].reset_index(drop=True)
    c = v["calls"].astype(float)
    is_b = v["file"].str.contains("blind21B|blind22B")
    corr = np.where((c < 40) & (v["bytes"] <= (1 << 24)) & ~is_b, S_WORLD[world] * (1 / c - 1 / 40), 0.0)
    return v.assign(median_a_us=v["median_us"], median_us=v["median_us"] - corr, b_corr_us=corr)


def predict(df: pd.DataFrame, hw) -> np.ndarray:
    from simulator.calibration import engine_allreduce as EA

    return EA.predict_us(df, hw)


def _hw(rules: dict):
    from hwmodels.spec import load_hardware
    from simulator.calibration.engine_allreduce_grid16 import with_rules

    return with_rules(load_hardware("H100-SXM"), rules)


#: the keys the candidate fits, the rows each touches (impls, ranks) and its bounds
FIT_KEYS = {"oneshot2_link": (("vllm_oneshot",), 2, (0.2, 1.0)),
            "multi_link_time": (None, 4, (0.5, 1.0))}


def fit_grid23_h100_rules(rows: dict | None = None, held: dict | None = None) -> dict:
    """The candidate: each FIT_KEYS key by a bounded 1-D least squares of log(model / measured) over h100_rows_as_b23's
    rows of 1-16 MiB it touches, the other rules held at `held` (default GRID22_H100_RULES). rows: {world: DataFrame}.
    Returns {"new": rules, "rows": {key: n}, "rms": {key: (before, after)}}."""
    from scipy.optimize import minimize_scalar

    from simulator.calibration.engine_allreduce_grid22 import GRID22_H100_RULES

    held = dict(GRID22_H100_RULES if held is None else held)
    rows = {w: h100_rows_as_b23(w) for w in (2, 4)} if rows is None else rows
    new, n, rms = dict(held), {}, {}
    for key, (impls, world, bounds) in FIT_KEYS.items():
        v = rows[world]
        v = v[(v["bytes"] > 1 << 20) & (v["bytes"] <= 1 << 24)]
        if impls is not None:
            v = v[v["impl"].isin(impls)]
        v = v.reset_index(drop=True)
        y = np.log(v["median_us"].to_numpy(float))

        def loss(x, key=key, v=v, y=y):
            return float(np.mean((np.log(predict(v, _hw({**held, key: float(x)}))) - y) ** 2))

        res = minimize_scalar(loss, bounds=bounds, method="bounded", options={"xatol": 1e-4})
        new[key] = round(float(res.x), 4)
        n[key] = len(v)
        before = loss(1.0) if key == "multi_link_time" else float(np.mean((np.log(predict(v, _hw(held))) - y) ** 2))
        rms[key] = (float(np.sqrt(before)), float(np.sqrt(loss(new[key]))))
    return {"new": new, "rows": n, "rms": rms}


#: the H100's candidate: fit_grid23_h100_rules()["new"] as committed before grid 23 was measured (GRID22_H100_RULES plus
#: the two new engine-only link keys)
GRID23_H100_RULES = {"first_fill_extra": 0.57, "lamport_overlap": 0.1231, "lamport_phase2": 0.9261, "twoshot2_link": 0.533,
                     "oneshot_peer_share": 0.0228, "lamport2_link": 0.6008, "oneshot2_link": 0.6191, "multi_link_time": 0.9224}


#: the 2-rank part of the candidate (GRID22_H100_RULES + oneshot2_link; multi_link_time prices only > 2 ranks, so at 2
#: ranks this IS GRID23_H100_RULES): what ships if the 4 x H100 run never comes and a 2 x H100 run wins by TWO_RANK_SHIP_RULE
GRID23_H100_2RANK_RULES = {k: v for k, v in GRID23_H100_RULES.items() if k != "multi_link_time"}
#: the rule for a 2 x H100 run of grid 23's 2-rank rows (lab/kernels/run_engine_allreduce_2rank_23_24.sh), committed before
#: that call: over grid 23's 15 two-rank cells (protocol B; the diagnostic rows left out), GRID23_H100_2RANK_RULES ships
#: (H100-SXM.yaml gets oneshot2_link, not multi_link_time) only if it meets MORE of them than main (GRID22_H100_RULES), or
#: as many with a lower pooled |error| median AND p90 over the 2-rank rows; the H100's STANDING then moves to that run's
#: 2-rank rows only if it ships, and grid 22's 4-rank cells stay in it. Grid 24's 2-rank rows are reported, not judged.
TWO_RANK_SHIP_RULE = "more of the 15 two-rank cells of grid 23, or as many with a lower pooled median AND p90"


def main_hw():
    """The H100 as shipped at BLIND23_MAIN_COMMIT (GRID22_H100_RULES)."""
    from simulator.calibration.engine_allreduce_grid22 import GRID22_H100_RULES

    return _hw(GRID22_H100_RULES)


def new_hw():
    """The H100 with the candidate's rules (GRID23_H100_RULES)."""
    return _hw(GRID23_H100_RULES)


def price_protocol_b(df: pd.DataFrame, main, new, device: str, main_label: str, new_label: str) -> pd.DataFrame:
    """A protocol-B grid's prediction frame (grids 23-25): `df`'s rows (engine_allreduce.grid) with the kind,
    pred_main_us / pred_new_us (main's and new's prices, 3 decimals), TensorRT-LLM's launch columns, the size regime,
    protocol B's calls / replays, the device and both models' labels."""
    from simulator.calibration import engine_allreduce as EA

    df = df.copy()
    df["kind"] = df["impl"].map(EA.IMPL_KIND)
    df["pred_main_us"] = np.round(predict(df, main), 3)
    df["pred_new_us"] = np.round(predict(df, new), 3)
    EA.trtllm_launch_columns(df, int(main.units), tokens_per_cluster=False)
    df["regime"] = EA.size_regime(df["bytes"])
    df["calls_B"] = calls_b(df["bytes"])
    df["reps_B"] = REPS_B
    df["device"] = device
    df["main_model"] = main_label
    df["new_model"] = new_label
    return df


def blind23_prediction(out: str | Path) -> pd.DataFrame:
    """Write blind grid 23's prediction BEFORE it is measured: pred_main_us (the H100 as shipped at BLIND23_MAIN_COMMIT,
    GRID22_H100_RULES) and pred_new_us (GRID23_H100_RULES), the size regime, protocol B's calls / replays, diag."""
    from simulator.calibration.engine_allreduce_grid22 import GRID22_H100_RULES

    df = price_protocol_b(blind23_grid(), main_hw(), new_hw(), "H100-SXM",
                          f"the H100-SXM as shipped at {BLIND23_MAIN_COMMIT} (engine_allreduce_rules {GRID22_H100_RULES})",
                          f"the H100-SXM with engine_allreduce_rules {GRID23_H100_RULES} (GRID23_H100_RULES, the candidate)")
    df.to_csv(out, index=False)
    return df


def join_run(pred_csv: str, meas_glob: str, data_dir: Path | None = None) -> pd.DataFrame | None:
    """A committed protocol-B prediction (pred_main_us, and pred_new_us where it has one) joined to the newest run matching
    meas_glob: one row per (implementation, ranks, shape) with median_us / p20_us / p80_us / calls, err = pred_main_us /
    median - 1, errnew the candidate's, spread = p80 / p20; WRONG rows left out. None while no such run is committed.
    Grids 23-25 (H100 and H200) all join this way."""
    from hwmodels import datafiles as DF
    from simulator.calibration import engine_allreduce as EA

    d = EA.DATA_DIR if data_dir is None else Path(data_dir)
    f = DF.glob(d, meas_glob)
    if not f:
        return None
    pred = pd.read_csv(DF.resolve(d / pred_csv))
    key = ["impl", "world", "tokens", "hidden"]
    m = pd.read_csv(f[-1])
    m = m[~m["note"].astype("string").fillna("").str.contains("WRONG")]
    out = pred.merge(m[key + ["median_us", "p20_us", "p80_us", "calls"]], on=key, how="inner")
    out["err"] = out["pred_main_us"] / out["median_us"] - 1.0
    if "pred_new_us" in out:
        out["errnew"] = out["pred_new_us"] / out["median_us"] - 1.0
    out["spread"] = out["p80_us"] / out["p20_us"]
    return out


def load_blind23(data_dir: Path | None = None) -> pd.DataFrame | None:
    """The committed prediction joined to protocol B's H100 measurement (join_run); None while the CSV is missing."""
    return join_run(BLIND23_PRED_CSV, BLIND23_MEAS_GLOB, data_dir)


def judge(r: pd.DataFrame, err: str = "err") -> pd.DataFrame:
    """Per (implementation, ranks, size regime) of the 31 cells (diag rows left out): n, measured median, |error| median /
    p90, signed median (%), met (median <= 10 %, p90 <= 25 %), median replay spread p80 / p20."""
    rows = []
    for (impl, g, reg), t in r[~r["diag"].astype(bool)].groupby(["impl", "world", "regime"]):
        e = 100 * t[err]
        med, p90 = e.abs().median(), e.abs().quantile(0.9)
        rows.append({"impl": impl, "world": int(g), "regime": reg[2:], "n": len(t), "meas_us": t["median_us"].median(),
                     "med": med, "p90": p90, "signed": e.median(), "met": bool(med <= 10 and p90 <= 25),
                     "spread": t["spread"].median()})
    return pd.DataFrame(rows)


def pooled(r: pd.DataFrame, world: int | None = None, err: str = "err") -> dict:
    """Pooled |error| median / p90, signed median and cells met over the 31 cells' rows (err: "err" main, "errnew" new)."""
    t = r[~r["diag"].astype(bool)]
    t = t if world is None else t[t["world"] == world]
    e = 100 * t[err]
    j = judge(t, err)
    return {"n": len(t), "med": float(e.abs().median()), "p90": float(e.abs().quantile(0.9)),
            "signed": float(e.median()), "met": int(j["met"].sum()), "cells": len(j)}


def diag_rows(r: pd.DataFrame) -> pd.DataFrame:
    """The 2-rank diagnostic rows at 12-30 MiB (BLIND23_DIAG), every implementation measured there, both models' signed
    errors (%): reported, not counted."""
    t = r[r["diag"].astype(bool)].copy()
    t["main_%"], t["new_%"] = 100 * t["err"], 100 * t["errnew"]
    return t[["impl", "tokens", "hidden", "bytes", "median_us", "pred_main_us", "pred_new_us", "main_%", "new_%"]]


#: the shipped rules' source line in H100-SXM.yaml (engine_allreduce_rules_source), set once judged
GRID23_SOURCE = None


def write_rules(out_dir: Path, rules: dict, source: str) -> Path:
    """Merge `rules` into out_dir/H100-SXM.yaml as engine_allreduce_rules ONLY (engine_allreduce_grid16.write_rules)."""
    from simulator.calibration.engine_allreduce_grid16 import write_rules as w16

    return w16(out_dir, "H100-SXM", rules, source)
