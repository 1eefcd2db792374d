"""The first looks on the summary board: the per-row first-look errors of the production-kernel campaign and the
DeepGEMM indexer grid agree with the per-regime tables the report prints (same committed prices, same rows)."""
from __future__ import annotations

import numpy as np
import pytest

from hwmodels.spec import load_hardware
from simulator.calibration import fit_deepgemm_indexer as FI
from simulator.calibration import fit_production_topk_gemm as FP


def _campaign():
    for f in sorted(FP.DATA_DIR.glob("production_kernels_nvidia*.csv")):
        if "_first_look_" in f.name or f.stem.endswith(("_rotated", "_fresh")):
            continue
        fl = f.with_name(f.name.replace("production_kernels_", "production_kernels_first_look_"))
        if fl.is_file():
            return f, fl
    pytest.skip("no production-kernel campaign with a first look committed")


def test_campaign_first_look_rows_match_the_regime_table():
    f, fl = _campaign()
    e = FP.first_look_errors(f, fl)
    assert len(e) and np.isfinite(e["err_pct"]).all()
    fams = set(e["regime"].str.split(":").str[0])
    assert fams == {"top-k sglang", "GEMM fp8_block", "GEMM fp8_rowwise", "GEMM fp8_tensorwise"}
    tab = FP.accuracy(f, fl, load_hardware("H100-SXM"))
    per = tab[tab["part"] != "fit"].set_index("regime")
    for reg, x in e.groupby("regime"):
        assert round(float(x["err_pct"].abs().median()), 1) == pytest.approx(per.loc[reg, "first_look_med"], abs=0.051)
        assert round(float(x["err_pct"].median()), 1) == pytest.approx(per.loc[reg, "first_look_signed"], abs=0.051)


def test_indexer_first_look_frame_is_the_accuracy_tables_rows():
    meas = FI.latest_csv()
    fl = FI.DATA_DIR / "deepgemm_indexer_first_look_h100.csv"
    if meas is None or not fl.is_file():
        pytest.skip("indexer grid or its first look not committed")
    d = FI.first_look_frame(meas, fl)
    tab = FI.accuracy(meas, fl, load_hardware("H100-SXM"))
    a = tab[tab["model"].str.startswith("first look (a)")]
    assert len(d) == int(a["n"].sum())
    assert np.isfinite(d["pred_main_us"]).all() and (d["median_us"] > 0).all()
