"""The seventeenth xqa grid: mha.cu's verification chain premium (simulator.kernels.xqa.XQA_SPEC_TILE_SHARE), its loader
and the committed blind grid."""
import numpy as np
import pandas as pd

from simulator.calibration import fit_production_attention as FP
from simulator.kernels import xqa as XQ


def _bytes(q, T, share):
    keep = XQ.XQA_SPEC_TILE_SHARE
    try:
        XQ.XQA_SPEC_TILE_SHARE = share
        ops, _ = XQ.xqa(8, q, T, 32, 8, 128, 2, 132, split="port", split_sms=1)
        return float(np.asarray(ops[0].bytes_read).ravel()[0])
    finally:
        XQ.XQA_SPEC_TILE_SHARE = keep


def test_share_scales_verification_chains_only():
    # grid 17's shipped share, replaced on grid 18 by XQA_SPEC_STREAM_SHARE (tests/test_xqa_spec_stream.py)
    assert XQ.XQA_SPEC_TILE_SHARE_CANDIDATE > 0.0 and XQ.XQA_SPEC_TILE_SHARE == 0.0
    assert _bytes(2, 3000, 0.5) > _bytes(2, 3000, 0.0) * 1.4        # q 2, 12 tiles: scaled
    assert _bytes(1, 3000, 0.5) == _bytes(1, 3000, 0.0)             # q 1: untouched
    assert _bytes(2, 200, 0.5) == _bytes(2, 200, 0.0)               # one tile: untouched


def test_x17_committed_grid():
    p = pd.read_csv(FP.DATA_DIR / FP.XQA_X17_PRED_CSV)
    assert len(p) == 30
    assert {"pred_base_us", "pred_new_us", "pred_here_off_us", "role", "model_commit", "base_commit"} <= set(p.columns)
    assert np.allclose(p["pred_here_off_us"], p["pred_base_us"])
    b = FP.load_xqa_x17()
    assert len(b) == 30 and b["base_err_pct"].notna().all() and b["new_err_pct"].notna().all()
    assert set(b["role"]) == {"q1", "q2_half", "q2_wave", "q2_two", "control"}
