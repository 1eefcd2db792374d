"""Prefill-attention calibration (simulator/calibration/fit_prefill.py): compute.attention from causal prefill."""
import pytest

from hwmodels import datafiles as DF
from hwmodels.errors import SparsesimError
from hwmodels.spec import load_efficiency, load_hardware
from simulator.calibration import fit as F
from simulator.calibration import fit_prefill as FP

CSV = F.DATA_DIR / "prefill_attn_nvidia-h100-80gb-hbm3_2026-11-22.csv"


def test_fit_recovers_generated_compute_efficiency():
    df = FP.load(CSV)
    hw = load_hardware("H100-SXM")
    truth = F.efficiency_with(hw.efficiency, {"compute.attention": 0.42})
    fake = df.assign(median_us=FP.predict_us(df, hw, truth))
    c, chk = FP.fit(fake, hw)
    assert c == pytest.approx(0.42, rel=1e-3)
    assert chk["error_pct"].abs().max() < 0.1


def test_causal_prefill_flops_match_the_measured_count():
    # the CSV's flops column is 4 B Hq d P(P+1)/2, the count dense.py prices: a 32K prompt at the fitted
    # efficiency takes flops / (989 TFLOP/s x compute.attention) (compute-bound)
    df = FP.load(CSV)
    row = df[(df.backend == "cudnn") & (df.seq == 32768) & (df.batch == 1) & (df.kv_heads == 8)].iloc[0]
    assert row.flops == 4 * 32 * 128 * 32768 * 32769 / 2
    hw = load_hardware("H100-SXM")
    pred = FP.predict_us(df.loc[[row.name]].reset_index(drop=True), hw, hw.efficiency)[0]
    assert pred == pytest.approx(row.flops / (hw.flops_for("bf16") * hw.efficiency.compute["attention"]) * 1e6,
                                 rel=0.05)


def test_committed_fit_and_refusal():
    assert 0.5 < load_efficiency("H100-SXM").compute["attention"] < 0.7   # cuDNN prefill ~590 TFLOP/s of 989
    with pytest.raises(SparsesimError, match="measure_prefill_attn"):
        FP.load(DF.resolve(F.DATA_DIR / "nvidia-h100-80gb-hbm3_2026-11-22.csv"))
