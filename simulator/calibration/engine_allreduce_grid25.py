"""Blind grid 25 of the engines' all-reduce kernels on 4 x H200: 4 ranks AND 2 ranks, all 31 (implementation, ranks, size
regime) cells, protocol B (lab/kernels/measure_engine_allreduce.py v22 --grid blind25; lab/kernels/run_engine_allreduce_
blind23_25.sh), with the hiddens of six other real models (896 Qwen2.5-0.5B, 1152 Gemma-3-1B, 2304 Gemma-2-2B, 2880
gpt-oss, 3840 Gemma-3-12B, 5376 Gemma-3-27B), none of them in grids <= 23 and only 1152 / 2304 in grid 24.

Why: after grid 24 shipped GRID24_H200_RULES (engine_allreduce_grid24.py), the H200's two misses on grid 24 are TensorRT-LLM's
Lamport one-shot at 4 ranks and <= 64 KiB, plain -10.9 % and + residual + RMSNorm -12.8 % signed (too fast). Every H200 run
since the first campaign shows the same sign there (-2 to -14 %, median about -8 %, 12 runs), while vLLM's one-shot at the
same sizes sits near 0 and the H100's Lamport rows near -2 % (plain) / -5 % (fused): the H200's engine terms (GRID15_H200
_CANDIDATE: phase 3.58 us, pooled over the kinds) leave the Lamport about 0.4 us short at 4 ranks, and only at 4 ranks (its
2-rank rows sit at -4 to +5 %).

Structure (flashinfer 0.6.4 = flashinfer-ai/flashinfer @ f1e6fdcb, trtllm_allreduce_fusion.cuh
allreduce_fusion_kernel_oneshot_lamport): each thread pushes its vectors into every peer's buffer, then polls all g slots
of its own buffer in one loop until none holds the Lamport sentinel -- the wait ends with the LAST of the g - 1 peers'
pushes. The model prices that max over peers beyond the first as AR_PEER_SHARE x phase_s x (g - 2) per wait, one share
fitted on every kind's H100 rows (grid 13); grid 19 gave vLLM's one-shot its own share (oneshot_peer_share). The
candidate gives the Lamport one-shot its own, a new engine-only rule key (hwmodels.spec ENGINE_AR_RULES):
    lamport_peer_share  the Lamport one-shot's per-wait share of phase_s per peer beyond the first (AR_PEER_SHARE where a
                        device has none: the shipped model unchanged; zero effect at 2 ranks)

Fit (fit_grid25_h200_rules; LOOKED-AT rows only, grid 24's included): every H200 row measured before grid 25 of the
Lamport one-shot (plain and fused) at 4 ranks and <= 1 MiB (all timed with 40 calls a replay under either protocol), a
bounded 1-D least squares of log(model / measured), GRID24_H200_RULES held. Honesty: the form was chosen after grid 24's
two misses were seen, on the same rows it is fitted on; grid 25 is its first blind judgement.

Models priced (BLIND25_PRED_CSV, committed before the call): main = the H200 as shipped (GRID24_H200_RULES); new =
GRID25_H200_RULES. Ship rule (common rules, protocol B): new ships only if it meets MORE of the 31 cells than main, or as
many with a lower pooled |error| median AND p90.

Result (4 x H200, 2026-11-28 03:51 UTC, 350 rows): main 31 of 31 cells, pooled 4.36 / 10.51 %, signed +1.2 %; new 31 of
31, 4.39 / 10.76 %, +1.7 %: NOT shipped (as many cells, higher median and p90). On this host the 4-rank Lamport rows
<= 64 KiB sat at -2.9 % (plain) / -7.0 % (fused) under main, nearer zero than on grid 24's host (-10.9 / -12.8 %); the
share moved them to +4.6 / -2.2 %. The bias is host-dependent in size; the rule keeps main.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simulator.calibration.engine_allreduce_grid23 import _interleave as interleave

#: (tokens, hidden) in no earlier grid, at 4 AND 2 ranks: 8 at <= 64 KiB, 8 at 128-512 KiB, 8 at 512 KiB-1 MiB, 11 at
#: 1-7 MiB, the regimes interleaved so that a run cut short drops rows in every cell
BLIND25_SMALL = ((9, 896), (23, 896), (7, 1152), (19, 1152), (5, 2304), (13, 2304), (7, 2880), (5, 3840))
BLIND25_MIDDLE = ((83, 896), (101, 1152), (61, 2304), (53, 2880), (47, 3840), (37, 5376), (73, 2880), (89, 2304))
BLIND25_UPPER = ((71, 3840), (53, 5376), (131, 2304), (113, 2880), (83, 5376), (97, 3840), (173, 2880), (223, 2304))
BLIND25_LARGE = ((149, 3840), (211, 2880), (307, 2304), (139, 5376), (251, 3840), (397, 2880), (523, 2304), (331, 3840),
                 (601, 3840), (1031, 2880), (653, 5376))


BLIND25_SHAPES = interleave(BLIND25_LARGE, BLIND25_SMALL, BLIND25_MIDDLE, BLIND25_UPPER)
BLIND25_WORLDS = (4, 2)
BLIND25_PRED_CSV = "engine_allreduce_blind25_prediction_H200_2026-11-28.csv"
BLIND25_MEAS_GLOB = "engine_allreduce_blind25B_nvidia-h200*.csv"
#: main's commit whose shipped H200 (GRID24_H200_RULES) the prediction prices
BLIND25_MAIN_COMMIT = "7541c42"
_LAMPORT = ("trtllm_ar_oneshot", "trtllm_arnorm_oneshot")


def earlier_shapes25() -> set:
    """Every (tokens, hidden) an earlier grid measured (campaign, blind 4, 6-24, grid 23's diagnostic)."""
    from simulator.calibration import engine_allreduce_grid24 as G24

    return G24.earlier_shapes24() | set(G24.BLIND24_SHAPES)


def blind25_grid() -> pd.DataFrame:
    from simulator.calibration import engine_allreduce as EA

    return EA.grid(BLIND25_WORLDS, list(BLIND25_SHAPES)).assign(diag=False)


def h200_rows25(data_dir: Path | None = None) -> pd.DataFrame:
    """Every H200 row measured before grid 25 (every engine_allreduce*nvidia-h200* run, replicates included; predictions,
    WRONG rows and grid 25 left out), with its file name."""
    from hwmodels import datafiles as DF
    from simulator.calibration import engine_allreduce as EA

    d = EA.DATA_DIR if data_dir is None else Path(data_dir)
    parts = []
    for p in DF.glob(d, "engine_allreduce*nvidia-h200*.csv"):
        name = Path(p).name
        if "prediction" in name or "blind25" in name:
            continue
        m = pd.read_csv(p)
        if "median_us" in m:
            parts.append(m.assign(file=name))
    v = pd.concat(parts, ignore_index=True)
    v = v[~v["note"].astype("string").fillna("").str.contains("WRONG") & v["impl"].isin(list(EA.IMPL_KIND))]
    return v.reset_index(drop=True)


def fit_grid25_h200_rules(rows: pd.DataFrame | None = None) -> dict:
    """lamport_peer_share by a bounded 1-D least squares of log(model / measured) over the Lamport one-shot's 4-rank rows
    <= 1 MiB of h200_rows25(), GRID24_H200_RULES held. Returns {"new": rules, "rows": n, "rms": (before, after)}."""
    from scipy.optimize import minimize_scalar

    from hwmodels.roofline import AR_PEER_SHARE
    from simulator.calibration.engine_allreduce import predict_us
    from simulator.calibration.engine_allreduce_grid24 import GRID24_H200_RULES, h200_hw

    v = h200_rows25() if rows is None else rows
    v = v[(v["world"] == 4) & v["impl"].isin(_LAMPORT) & (v["bytes"] <= 1 << 20)].reset_index(drop=True)
    y = np.log(v["median_us"].to_numpy(float))

    def loss(x):
        return float(np.mean((np.log(predict_us(v, h200_hw({**GRID24_H200_RULES, "lamport_peer_share": x}))) - y) ** 2))

    res = minimize_scalar(loss, bounds=(0.0, 0.5), method="bounded", options={"xatol": 1e-4})
    new = {**GRID24_H200_RULES, "lamport_peer_share": round(float(res.x), 4)}
    return {"new": new, "rows": len(v),
            "rms": (float(np.sqrt(loss(AR_PEER_SHARE))), float(np.sqrt(loss(new["lamport_peer_share"]))))}


#: the H200's candidate: fit_grid25_h200_rules()["new"] as committed before grid 25 was measured (438 rows; rms of
#: log(model / measured) 0.077 -> 0.061; in-sample signed median <= 64 KiB plain -7.7 -> -1.1 %, fused -9.1 -> -3.5 %,
#: 128 KiB-1 MiB -0.9 / -1.1 -> +2.7 / +1.9 %)
GRID25_H200_RULES = {"first_fill_extra": 0.66, "lamport_overlap": 0.11, "lamport2_link": 0.6234, "twoshot2_link": 0.627,
                     "oneshot2_link": 0.6036, "multi_link_time": 0.9197, "lamport_peer_share": 0.081}


def models():
    """(main_hw, new_hw, main_label, new_label): the H200 as shipped (GRID24_H200_RULES) and the candidate."""
    from simulator.calibration.engine_allreduce_grid24 import GRID24_H200_RULES, h200_hw

    return (h200_hw(GRID24_H200_RULES), h200_hw(GRID25_H200_RULES),
            f"the H200 as shipped after grid 24 (engine_allreduce_rules {GRID24_H200_RULES})",
            f"the H200 with engine_allreduce_rules {GRID25_H200_RULES} (GRID25_H200_RULES, the candidate)")


def blind25_prediction(out: str | Path) -> pd.DataFrame:
    """Write blind grid 25's H200 prediction BEFORE it is measured (pred_main_us / pred_new_us, regime, protocol B;
    engine_allreduce_grid23.price_protocol_b)."""
    from simulator.calibration.engine_allreduce_grid23 import price_protocol_b

    main, new, main_label, new_label = models()
    df = price_protocol_b(blind25_grid(), main, new, "H200", main_label, new_label)
    df.to_csv(out, index=False)
    return df


def load_blind25(data_dir: Path | None = None) -> pd.DataFrame | None:
    """The committed prediction joined to the H200 run of grid 25 (engine_allreduce_grid23.join_run); None while none."""
    from simulator.calibration.engine_allreduce_grid23 import join_run

    return join_run(BLIND25_PRED_CSV, BLIND25_MEAS_GLOB, data_dir)

if __name__ == "__main__":
    import sys

    from simulator.calibration.engine_allreduce import DATA_DIR

    if sys.argv[1:] == ["fit"]:
        print(fit_grid25_h200_rules())
    else:
        d = blind25_prediction(DATA_DIR / BLIND25_PRED_CSV)
        print(f"wrote {len(d)} rows to {DATA_DIR / BLIND25_PRED_CSV}")
