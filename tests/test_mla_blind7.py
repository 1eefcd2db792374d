"""The seventh MLA blind grid (FlashMLA at one request per part) and the padded-MMA alternative (FM_MMA_PADDED)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from hwmodels import datafiles as DF
from simulator.kernels import flashmla as FM

ROOT = Path(__file__).resolve().parents[1]


def _campaign_script():
    spec = importlib.util.spec_from_file_location("measure_production_attention",
                                                  ROOT / "lab/kernels/measure_production_attention.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_mla_blind7_grid_is_new_holds_one_request_per_part_and_both_price_files_cover_it():
    import pandas as pd

    from simulator.calibration import fit_production_attention as FP

    m = _campaign_script()
    sh = pd.DataFrame([s for p in ("fi_mla", "flashmla") for s in m.shapes(p, "mla_blind7")])
    assert set(sh["family"]) == {"flashmla"} and len(sh) == 44
    keys = ["family", "heads", "batch", "context"]
    for f in ("", "_ea0997d"):
        p = pd.read_csv(DF.resolve(FP.DATA_DIR / f"production_attention_mla_blind7_predictions{f}.csv"))
        assert len(sh.merge(p[keys + ["pred_us"]], on=keys)) == len(sh) and p["pred_us"].gt(0).all()
    seen = set()
    for f in DF.glob(FP.DATA_DIR, "production_attention_*nvidia*.csv"):
        if "blind7" in f.name or "_grids" in f.name:
            continue
        d = pd.read_csv(f)
        if {"batch", "context"} <= set(d.columns):
            if "family" in d.columns:
                d = d[d["family"].isin(["fi_mla", "flashmla"])]
            seen |= set(zip(d["batch"], d["context"]))
    assert not seen & set(zip(sh["batch"], sh["context"]))
    # the grid's point: at 16-64 heads (one 64-row head block, 132 parts) the busiest part walks one request, but in
    # the controls (B 240 T 700, B 416 T 56)
    one = sh[sh["heads"] <= 64]
    _, info = FM.flashmla(one["batch"], 1.0, one["context"], one["heads"], 512.0, 64.0, 2.0, 132)
    assert (info["requests_per_part"][~one["batch"].isin([240, 416]).to_numpy()] == 1).all()


def test_padded_mma_counts_64_rows_and_whole_blocks(monkeypatch):
    # FM_MMA_PADDED: the tensor term is 64-row head blocks x whole 64-token blocks; off = the useful rows and tokens
    def flops(H, T):
        ls, _ = FM.flashmla(8.0, 1.0, T, H, 512.0, 64.0, 2.0, 132)
        return float(np.asarray(ls[0].flops))

    monkeypatch.setattr(FM, "FM_MMA_PADDED", False)
    useful16, useful128 = flops(16.0, 100.0), flops(128.0, 128.0)
    monkeypatch.setattr(FM, "FM_MMA_PADDED", True)
    assert flops(16.0, 100.0) == pytest.approx(useful16 * 4.0 * 128.0 / 100.0)
    assert flops(128.0, 128.0) == pytest.approx(useful128)
