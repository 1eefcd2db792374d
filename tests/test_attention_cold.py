"""The cold K/V grid: the harness's cold option (no copy cap, whole multiples of the copies per graph), the warm-share
rule kept off, and the committed grid (predictions before the measurement, every measured row priced)."""
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hwmodels import datafiles as DF
from simulator.calibration import fit_production_attention as FP

ROOT = Path(__file__).resolve().parents[1]


def _lab(name):
    import importlib

    here = str(ROOT / "lab" / "kernels")
    sys.path.insert(0, here)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(here)


def test_cold_option_spans_the_bytes_with_no_cap():
    mpa = _lab("measure_production_attention")
    old = mpa.COLD_BYTES
    try:
        assert mpa.copies_for(64 << 10) == 16          # the campaign's cap: 16 x 64 KiB stay in the L2
        mpa.COLD_BYTES = 128 << 20
        r = mpa.copies_for(64 << 10)
        assert r == 2048 and r * (64 << 10) >= 128 << 20
        assert mpa.cold_calls(r) == r and mpa.cold_calls(3) == 66 and mpa.cold_calls(2) == 64
    finally:
        mpa.COLD_BYTES = old


def test_warm_share_rule():
    mb = float(1 << 20)
    hit = FP.harness_kv_l2_hit(np.array([1 * mb, 2.5 * mb, 8 * mb, 64 * mb]))
    assert np.allclose(hit, [1.0, (50 - 40) / 25, 0.0, 0.0])
    assert FP.HARNESS_KV_L2 is False        # main's model kept: the rule lost on the cold grid


def test_cold_grid_priced_before_and_joined():
    # the report section lives in benchmarks/ (a checkout's folder, not installed: .ci/run's suite has none)
    A = pytest.importorskip("benchmarks.accuracy_sections.attention_cold")

    p = pd.read_csv(DF.resolve(FP.DATA_DIR / A.PRED))
    assert p["base_commit"].iloc[0] == "ea0997d" and set(p["mode"]) == {"warm", "cold"}
    b = A.load()
    m = pd.read_csv(sorted(DF.glob(FP.DATA_DIR, A.GLOB))[-1])
    assert len(b) == len(m) == 114
    r = A.ratios(b)
    ctrl = r[r["role"] == "control"]
    assert len(ctrl) == 8 and ctrl["ratio"].between(0.95, 1.05).all()
