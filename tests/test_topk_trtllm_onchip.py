"""TensorRT-LLM's top-k with the job's on-chip rounds off the load chain (topk_trtllm.ONCHIP_JOB), judged on the H200's
on-chip grid (simulator/calibration/topk_trtllm_onchip.py)."""
import numpy as np
import pandas as pd
import pytest

from hwmodels.spec import load_hardware
from simulator.calibration import fit_production_topk_gemm as F
from simulator.calibration import topk_engines as E
from simulator.calibration import topk_trtllm_onchip as OC
from simulator.kernels import topk_trtllm as TK


def test_shipped_terms_are_the_judged_candidate():
    import hwmodels.roofline as R
    c = OC.ONCHIP_CANDIDATE
    assert TK.ONCHIP_JOB and R.CHAIN_QUEUED_P_SHARED is None and TK.QUEUE_P_SHARED is None
    assert c["queue_p_shared"] == R.CHAIN_QUEUED_P
    assert {k: dict(v) for k, v in TK.PAIR_SHARES_L2.items()} == c["pair_shares"]
    assert TK.NARROW_PERCTA == c["narrow"] and TK.PAIR_SHARES is TK.PAIR_SHARES_L2
    assert R.KIND_CODE["topk_trtllm"] in R.L1_AT_L2_ROUND
    with E.before_onchip():
        assert not TK.ONCHIP_JOB and R.CHAIN_QUEUED_P_SHARED == 2.0
        assert TK.PAIR_SHARES_L2["single"]["l2_sweep"] == 0.487 and TK.NARROW_PERCTA is TK.NARROW_PERCTA_RANKW_CANDIDATE
    assert TK.ONCHIP_JOB and TK.PAIR_SHARES_L2 == c["pair_shares"]


def test_job_rounds_cost_the_l2_round_whatever_the_hit_share():
    """A launch whose scores stay in the L2 prices its job at the L2 round either way; one past the L2 pays its job at
    the HBM round only with ONCHIP_JOB off (each toggled alone, every other term as shipped)."""
    hw = load_hardware("H200")
    t = E._trtllm_frame([("recorded", 4, 6100), ("recorded", 3000, 9000)])
    t["kernel"] = [E.CSV_KERNEL["trtllm"], E.CSV_KERNEL["trtllm_prefill"]]
    on = E.predict_trtllm(t, hw)
    old = TK.ONCHIP_JOB
    try:
        TK.ONCHIP_JOB = False
        off = E.predict_trtllm(t, hw)
    finally:
        TK.ONCHIP_JOB = old
    assert on[0] == pytest.approx(off[0], rel=0.02) and on[1] < 0.93 * off[1]


def test_grid_committed_prices_are_reproduced_and_measured():
    p = pd.read_csv(F.DATA_DIR / OC.PREDICTION)
    assert len(p) == 52 and set(p["regime"]) == {r for r, _, _ in OC.ONCHIP_GRID}
    hw = load_hardware("H200")
    pick = p.groupby("kernel").head(1).reset_index(drop=True)
    assert OC.price(pick, hw) == pytest.approx(pick["pred_us"].to_numpy(), rel=1e-3)
    with E.before_onchip():
        assert OC.price(pick, hw) == pytest.approx(pick["pred_main_us"].to_numpy(), rel=1e-3)
    m = OC.measured()
    assert m is not None and len(m) == 52 and not m["wrong"].any()
    err = np.abs(m["pred_us"] / m["median_us"] - 1.0)
    assert np.median(err) < 0.10
