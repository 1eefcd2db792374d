"""The single-CTA top-k calibration (simulator/calibration/fit_topk_cta.py) recovers what it generated."""
import numpy as np
import pytest

from hwmodels import datafiles as DF
from hwmodels.errors import SparsesimError
from hwmodels.spec import load_hardware
from simulator.calibration import fit as F
from simulator.calibration import fit_topk_cta as FK

CSV = DF.resolve(F.DATA_DIR / "topk_cta_nvidia-h100-80gb-hbm3_2026-11-22.csv")


def test_load_reads_launch_sweeps_and_refuses_other_csvs():
    df = FK.load(CSV)
    assert set(df["kernel"]) == {"radix", "gvr"}            # torch.topk rows are not this kernel class
    multi = df[df["rows"] > 1]
    assert (multi["sweeps_launch"] >= multi["sweeps_mean"]).all()   # a launch lasts as long as its slowest row
    with pytest.raises(SparsesimError, match="measure_topk_cta"):
        FK.load(DF.resolve(F.DATA_DIR / "nvidia-h100-80gb-hbm3_2026-11-22.csv"))


def test_fit_recovers_generated_parameters():
    df = FK.load(CSV)
    hw = load_hardware("H100-SXM")
    truth = F.efficiency_with(hw.efficiency, {"compute.topk_cta": 0.2, "fixed_us.topk_cta": 2.0,
                                              "sync_us.topk_cta": 0.5, "saturation.topk_cta": 0.8,
                                              "memory.topk_cta": 0.7})
    fake = df.assign(median_us=FK.predict_us(df, hw, truth, 6.0, 3e5, 40.0))
    eff, (hist, gvr_fixed, serial), meta = FK.fit(fake, hw)
    assert eff.compute["topk_cta"] == pytest.approx(0.2, rel=0.02)
    assert hist == pytest.approx(6.0, rel=0.05)
    assert gvr_fixed == pytest.approx(3e5, rel=0.05)
    assert serial == pytest.approx(40.0, rel=0.2)
    assert meta["rms_log_error"] < 1e-3
    # with the constants fixed (what the CLI writes) only the efficiencies move
    eff2, consts2, _ = FK.fit(fake, hw, consts=(6.0, 3e5, 40.0))
    assert consts2 == (6.0, 3e5, 40.0) and eff2.compute["topk_cta"] == pytest.approx(0.2, rel=0.01)
    chk = FK.check(fake, hw, eff, (hist, gvr_fixed, serial))
    fit_rows = FK.fit_mask(fake)
    assert np.abs(chk["error_pct"][fit_rows]).max() < 1.0
    # the DRAM terms (memory / saturation) are only weakly pinned by the few cold rows: held-out rows of
    # many CTAs over rows larger than L2 drift a little, but stay within 10 %
    assert np.abs(chk["error_pct"]).max() < 10.0
