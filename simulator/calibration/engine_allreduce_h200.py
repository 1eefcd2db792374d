"""The H200's own engines' all-reduce terms (engine_allreduce_grid12.GRID12_CANDIDATE, committed at 95e278e and never judged
on an H200: three 4 x H200 requests were served by H100s) judged on the one H200 grid measured after them: blind grid 14,
which an H100 request ran on 4 x H200 (engine_allreduce_blind14_nvidia-h200_x4_*.csv).

Honesty note: grid 14's H200 prices below were written AFTER that measurement existed, from constants committed before
it (GRID12_CANDIDATE, h200_links: nothing fitted or chosen after the measurement), and this prediction file was
committed before any error against it was computed. It is a late pricing of a frozen model, labelled so in the report,
not a prediction made before the call.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

#: grid 14's shapes priced for the H200 (main = the H200 as shipped; new = GRID12_CANDIDATE as fitted, without grid 13's
#: rules; new13 = the same with grid 13's rules on, as write_h200_engine_terms would ship it today)
H200_GRID14_PRED_CSV = "engine_allreduce_blind14_prediction_H200_late_2026-11-27.csv"
#: the commit that holds GRID12_CANDIDATE's values (engine_allreduce.py), made before grid 14 was measured
GRID12_CANDIDATE_COMMIT = "95e278e"


def h200_grid14_prediction(out: str | Path) -> pd.DataFrame:
    """Write grid 14's rows priced by the H200 as shipped (pred_main_us), GRID12_CANDIDATE under the structure it was
    fitted with (pred_new_us: predict_with(..., {}), grid 13's and 14's rules off) and under the shipped rules
    (pred_new13_us: predict_us, grid 13's rules on once a device has engine terms)."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import engine_allreduce as EA
    from simulator.calibration import engine_allreduce_grid12 as G12
    from simulator.calibration import engine_allreduce_grid14 as G14

    h200, h100 = load_hardware("H200"), load_hardware("H100-SXM")
    cand = G12.h200_candidate(h200, h100)
    df = G14.blind14_grid()
    df["kind"] = df["impl"].map(EA.IMPL_KIND)
    df["pred_main_us"] = np.round(EA.predict_us(df, h200), 3)
    df["pred_new_us"] = np.round(EA.predict_with(df, cand, {}), 3)
    df["pred_new13_us"] = np.round(EA.predict_us(df, cand), 3)
    df["regime"] = EA.size_regime(df["bytes"])
    df["device"] = h200.name
    df["main_model"] = "H200 as shipped (no engine_ar terms, no custom-kind link terms)"
    df["new_model"] = (f"GRID12_CANDIDATE {G12.GRID12_CANDIDATE} (committed {GRID12_CANDIDATE_COMMIT}) + "
                       f"{G12.H200_LINKS_FROM}'s custom-kind link terms; priced late, after grid 14 was measured")
    df.to_csv(out, index=False)
    return df


if __name__ == "__main__":
    from simulator.calibration.engine_allreduce import DATA_DIR

    d = h200_grid14_prediction(DATA_DIR / H200_GRID14_PRED_CSV)
    print(f"wrote {len(d)} rows to {DATA_DIR / H200_GRID14_PRED_CSV}")
