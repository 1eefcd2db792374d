"""Blind grid 19 of the engines' all-reduce kernels on 4 x H100 (4 AND 2 ranks), aimed at the two 4-rank <= 64 KiB one-shot
cells grid 18 missed (vLLM's one-shot +15.9 % signed; TensorRT-LLM's Lamport one-shot 11.9 / 23.9 %, -7.0 % signed).

Source (flashinfer 0.6.4 @ f1e6fdcb):
  vllm_custom_all_reduce.cuh multi_gpu_barrier: threads 0..g-1 of each CTA each store ONE peer's flag and spin on that
      peer's flag in its own Signal, all at once: a barrier waits one max over the g - 1 peers, not g - 1 in a row;
      cross_device_reduce_1stage = start barrier, the unrolled packed loads from every rank (one round trip, the slowest
      peer), end barrier (__syncthreads first): 3 serialized waits, each a max of g - 1 peers; <= 64 KiB runs
      min(36, ceil(packs / 512)) <= 8 CTAs of 512 threads, so no loop step repeats. That is the structure main already
      prices (hwmodels.roofline AR_PEER_SHARE: (g - 2) x share x phase_s per wait); its share was fitted by grid 13 on
      every kind's rows together, and the pooled 4-rank vLLM one-shot rows (14 H100 runs) sit +7 % high at <= 64 KiB.
  trtllm_allreduce_fusion.cuh allreduce_fusion_kernel_oneshot_lamport: pushes to all ranks, clears the previous buffer,
      then every thread polls all g slots of its own buffer in ONE loop: one one-way wait, the slowest peer's -- the one
      wait main already charges. A share of phase_s above 2 ranks fitted on the pooled <= 64 KiB rows runs into 1 (the
      pooled rows are 2 % SLOWER than priced, grid 18's host 7 %): no candidate rule for it; the cell is host scatter.

    main = the H100 as shipped (GRID17_H100_RULES)
    new  = GRID19_H100_RULES: main + oneshot_peer_share (vLLM's one-shot's own per-wait share), fit_grid19_h100_rules on
           every looked-at 4-rank vLLM one-shot H100 row (all hosts pooled: every engine_allreduce_*h100* measurement
           incl. grids 14, 16, 18 and the replicates)
    alt  = GRID19_H100_ALT (named, NOT shipped): the same share fitted on the <= 64 KiB rows only

Both prices committed (BLIND19_PRED_CSV) before lab/kernels/run_engine_allreduce_blind19.sh measures (4 x H100 only: it
stops at once on H200s). Shapes (tokens, hidden) in no earlier grid (earlier_shapes19), each at 4 AND 2 ranks: 14 <= 64 KiB
(14 rows in each 4-rank one-shot target cell), >= 4 rows in every other cell.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

BLIND19_SHAPES = ((1, 5120), (2, 3584), (3, 2560), (4, 4608), (8, 3072), (18, 1280), (21, 1024), (6, 2048), (12, 1536),
                  (3, 4096), (8, 4096), (2, 6144), (4, 7168), (14, 1280),
                  (27, 4096), (30, 6144), (57, 2560), (120, 1280), (161, 1536),
                  (130, 3072), (93, 3584), (156, 2048), (183, 1536), (105, 3584),
                  (301, 2560), (201, 8192), (691, 5120), (601, 2048), (841, 4608), (601, 6144))
BLIND19_CONTROL = BLIND19_SHAPES
BLIND19_PRED_CSV = "engine_allreduce_blind19_prediction_H100-SXM_2026-11-28.csv"
BLIND19_MEAS_GLOB = "engine_allreduce_blind19_nvidia-h100*.csv"
#: main's commit (the H100 as shipped) the prediction prices
BLIND19_MAIN_COMMIT = "f845e58"
#: the H100's candidate: fit_grid19_h100_rules()["new"] as committed before grid 19 was measured
GRID19_H100_RULES = {"first_fill_extra": 0.57, "lamport_overlap": 0.10, "lamport_phase2": 0.911, "twoshot2_link": 0.533,
                     "oneshot_peer_share": 0.0228}
#: named before measuring, NOT shipped whatever grid 19 says: the share fitted on the <= 64 KiB rows only
GRID19_H100_ALT = {"first_fill_extra": 0.57, "lamport_overlap": 0.10, "lamport_phase2": 0.911, "twoshot2_link": 0.533,
                   "oneshot_peer_share": 0.0191}


def earlier_shapes19() -> set:
    """Every (tokens, hidden) an earlier grid measured (campaign, blind 4, 6-18)."""
    from simulator.calibration import engine_allreduce_grid18 as G18

    return G18.earlier_shapes18() | set(G18.BLIND18_SHAPES) | set(G18.BLIND18_CONTROL)


def blind19_grid() -> pd.DataFrame:
    """Blind grid 19's rows: BLIND19_SHAPES at 4 ranks, BLIND19_CONTROL at 2 (measure_engine_allreduce.py --grid blind19)."""
    from simulator.calibration import engine_allreduce as EA

    return pd.concat([EA.grid((4,), list(BLIND19_SHAPES)), EA.grid((2,), list(BLIND19_CONTROL))], ignore_index=True)


def h100_looked_at_rows19(data_dir: Path | None = None, names=None) -> pd.DataFrame:
    """Every measured 4-rank H100 row before grid 19 (engine_allreduce_grid17.h100_looked_at_rows: every
    engine_allreduce_*h100* measurement of every host, predictions and WRONG rows left out), grid 19 itself left out."""
    from simulator.calibration.engine_allreduce_grid17 import h100_looked_at_rows

    v = h100_looked_at_rows(world=4, data_dir=data_dir, names=names)
    return v[~v["file"].str.contains("blind19")].reset_index(drop=True)


def fit_grid19_h100_rules(rows: pd.DataFrame | None = None, held: dict | None = None) -> dict:
    """GRID19_H100_RULES / _ALT: oneshot_peer_share by a bounded 1-D least squares on log time over the looked-at 4-rank
    vLLM one-shot rows (new: all of them, <= 512 KiB; alt: <= 64 KiB), the other rules held at `held` (default: the H100
    as shipped when grid 19 was priced, GRID17_H100_RULES; later grids' rules would change the held prices)."""
    from scipy.optimize import minimize_scalar

    from hwmodels.spec import load_hardware
    from simulator.calibration.engine_allreduce_grid16 import with_rules

    h = load_hardware("H100-SXM")
    if held is None:
        from simulator.calibration.engine_allreduce_grid17 import GRID17_H100_RULES as held
    base = {k: v for k, v in held.items() if k != "oneshot_peer_share"}
    v = h100_looked_at_rows19() if rows is None else rows
    one = v[(v["impl"] == "vllm_oneshot") & (v["world"] == 4)]
    out = {}
    for name, sel in (("new", one), ("alt", one[one["bytes"] <= 64 * 1024])):
        sel = sel.reset_index(drop=True)
        y = np.log(sel["median_us"].to_numpy(float))
        r = minimize_scalar(lambda x, s=sel, y=y: float(np.sum((np.log(predict(s, with_rules(h, {**base,
                            "oneshot_peer_share": x}))) - y) ** 2)), bounds=(0.0, 1.0), method="bounded",
                            options={"xatol": 1e-5})
        out[name] = {**base, "oneshot_peer_share": round(float(r.x), 4)}
        out[f"{name}_rows"] = len(sel)
    return out


def predict(df: pd.DataFrame, hw) -> np.ndarray:
    from simulator.calibration import engine_allreduce as EA

    return EA.predict_us(df, hw)


def candidates() -> dict:
    """name -> the H100 as priced: main (as shipped), new (GRID19_H100_RULES), alt (GRID19_H100_ALT)."""
    from hwmodels.spec import load_hardware
    from simulator.calibration.engine_allreduce_grid16 import with_rules
    from simulator.calibration.engine_allreduce_grid17 import GRID17_H100_RULES

    h = load_hardware("H100-SXM")
    return {"main": with_rules(h, GRID17_H100_RULES), "new": with_rules(h, GRID19_H100_RULES),
            "alt": with_rules(h, GRID19_H100_ALT)}


def blind19_prediction(out: str | Path, model_commit: str) -> pd.DataFrame:
    """Write blind grid 19's prediction BEFORE it is measured: pred_main_us (the H100 as shipped at BLIND19_MAIN_COMMIT,
    GRID17_H100_RULES), pred_new_us (GRID19_H100_RULES, the shipping candidate), pred_alt_us (GRID19_H100_ALT, named,
    not shipped)."""
    from simulator.calibration.engine_allreduce_grid17 import GRID17_H100_RULES

    return write_rules_prediction(out, blind19_grid(), candidates(), model_commit, BLIND19_MAIN_COMMIT,
                                  {"main": GRID17_H100_RULES, "new": GRID19_H100_RULES, "alt": GRID19_H100_ALT})


def write_rules_prediction(out: str | Path, df: pd.DataFrame, cands: dict, model_commit: str, main_commit: str,
                           rules: dict) -> pd.DataFrame:
    """A blind grid's prediction of H100 rule sets (grids 19, 20): pred_<name>_us of each hardware in `cands` (main,
    new, alt), TensorRT-LLM's launch columns, the size regime, and each model in words (`rules`: name -> its rules)."""
    from simulator.calibration import engine_allreduce as EA

    df["kind"] = df["impl"].map(EA.IMPL_KIND)
    for n in ("main", "new", "alt"):
        df[f"pred_{n}_us"] = np.round(predict(df, cands[n]), 3)
    EA.trtllm_launch_columns(df, int(cands["main"].units), tokens_per_cluster=False)
    df["regime"] = EA.size_regime(df["bytes"])
    df["device"] = "H100-SXM"
    df["main_model"] = f"the H100-SXM as shipped at {main_commit} (engine_allreduce_rules {rules['main']})"
    df["new_model"] = f"the model at {model_commit}: the H100-SXM with engine_allreduce_rules {rules['new']}"
    df["alt_model"] = f"the model at {model_commit}: the H100-SXM with engine_allreduce_rules {rules['alt']} (not shipped)"
    df.to_csv(out, index=False)
    return df


def write_rules(out_dir: Path, rules: dict, source: str) -> Path:
    """Merge `rules` into out_dir/H100-SXM.yaml as engine_allreduce_rules ONLY (engine_allreduce_grid16.write_rules)."""
    from simulator.calibration.engine_allreduce_grid16 import write_rules as w16

    return w16(out_dir, "H100-SXM", rules, source)


#: the commit that holds blind grid 19's prediction (BLIND19_PRED_CSV), made before the measurement
BLIND19_PRED_COMMIT = "1e53d08"
#: the shipped rules' source line in H100-SXM.yaml (engine_allreduce_rules_source)
GRID19_SOURCE = ("simulator/calibration/engine_allreduce_grid19.py write_rules: GRID19_H100_RULES (grid 17's rules kept; "
                 "oneshot_peer_share by fit_grid19_h100_rules on every looked-at 4-rank vLLM one-shot H100 row, 161 rows "
                 "of 14 runs on several hosts, committed 1e53d08 before grid 19 ran), judged blind on 4 x H100 (2026-11-28 "
                 "01:29 UTC, 280 rows, 4 and 2 ranks): 29 of 31 regimes as main's 29, pooled 4.8 / 12.8 % against 5.2 / "
                 "13.0 % (4 ranks: 16 of 16 both, 4.0 / 11.3 % against 4.6 / 13.0 %; vLLM's one-shot 4 ranks <= 64 KiB "
                 "2.7 / 7.2 % against 7.8 / 13.9 %)")


def ship_grid19(out_dir: Path | None = None) -> Path:
    """Write GRID19_H100_RULES into the fitted H100-SXM.yaml (engine_allreduce_rules only), as shipped after grid 19."""
    d = Path(__file__).resolve().parents[2] / "hwmodels" / "calibration" / "fitted" if out_dir is None else Path(out_dir)
    return write_rules(d, GRID19_H100_RULES, GRID19_SOURCE)


def target_cell_by_host(data_dir: Path | None = None) -> pd.DataFrame:
    """vLLM's one-shot at 4 ranks <= 64 KiB per H100 run (every looked-at file, then grid 19's): n, measured median us,
    main's (GRID17_H100_RULES) and new's (GRID19_H100_RULES) |error| median / p90 and signed median, %."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import engine_allreduce as EA
    from simulator.calibration.engine_allreduce_grid16 import with_rules
    from simulator.calibration.engine_allreduce_grid17 import GRID17_H100_RULES, h100_looked_at_rows

    d = EA.DATA_DIR if data_dir is None else data_dir
    v = h100_looked_at_rows(world=4, data_dir=d)       # grid 19's own file included (its name holds h100)
    v = v[(v["impl"] == "vllm_oneshot") & (v["bytes"] <= 64 * 1024)].reset_index(drop=True)
    h = load_hardware("H100-SXM")
    rows = []
    for name, rules in (("main", GRID17_H100_RULES), ("new", GRID19_H100_RULES)):
        v[f"err_{name}"] = 100 * (predict(v, with_rules(h, rules)) / v["median_us"] - 1)
    for f, t in v.groupby("file", sort=False):
        row = {"run": f.replace("engine_allreduce_", "").replace("_nvidia-h100-80gb-hbm3", "").split("_20")[0]
               + (" (blind)" if "blind19" in f else ""), "n": len(t), "meas_us": t["median_us"].median()}
        for name in ("main", "new"):
            e = t[f"err_{name}"]
            row.update({f"{name}_med": e.abs().median(), f"{name}_p90": e.abs().quantile(0.9), f"{name}_signed": e.median()})
        rows.append(row)
    return pd.DataFrame(rows)
