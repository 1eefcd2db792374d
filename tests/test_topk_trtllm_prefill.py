"""The causal-prompt prefill top-k grid and the rows the product prices DSA prefill top-k at."""
import numpy as np

from simulator.calibration import topk_trtllm_prefill as PF
from simulator.strategies.dsa import prefill_topk_rows


def test_the_causal_rule_prices_only_the_rows_of_more_than_k_keys_at_their_mean_length():
    rows, n = prefill_topk_rows(2.0, np.array([3072.0, 32768.0]), 2048.0, "causal")
    assert np.allclose(rows, [2 * 1024, 2 * 30720]) and np.allclose(n, [(3072 + 2049) / 2, (32768 + 2049) / 2])
    rows, n = prefill_topk_rows(2.0, np.array([3072.0]), 2048.0, "mean")
    assert np.allclose(rows, [6144]) and np.allclose(n, [1536])      # every row, at a length below k: no job priced


def test_the_grid_holds_whole_prompts_of_one_chunk_in_both_regimes():
    assert all(r == n and n <= 32768 for _, r, n in PF.SHAPES)
    assert set(PF.regime([n for *_, n in PF.SHAPES])) == {"causal prompt, P <= 8K", "causal prompt, P > 8K"}


def test_the_prefill_lead_share_touches_only_the_prefill_entrys_paired_ctas():
    from hwmodels.spec import load_hardware
    from simulator.calibration import topk_engines as TE
    from simulator.kernels import topk_trtllm as TK

    t = TE._trtllm_frame([("recorded", 2000, 9000), ("recorded", 300, 40000)])
    pf = t.copy()
    pf["kernel"] = TE.CSV_KERNEL["trtllm_prefill"]
    hw = load_hardware("H200")
    old = TK.PREFILL_LEAD_SHARE
    try:
        TK.PREFILL_LEAD_SHARE = None
        a_pf, a_d = TE.predict_trtllm(pf, hw), TE.predict_trtllm(t, hw)
        TK.PREFILL_LEAD_SHARE = 0.9
        b_pf, b_d = TE.predict_trtllm(pf, hw), TE.predict_trtllm(t, hw)
    finally:
        TK.PREFILL_LEAD_SHARE = old
    assert (b_pf < a_pf).all() and np.allclose(a_d, b_d)
    assert {r for *_, r in PF.BLIND_CAUSAL}.isdisjoint({r for *_, r in PF.SHAPES})


def test_the_stagger_grids_shapes_land_in_the_regimes_they_were_chosen_for():
    import collections

    t = PF.stagger_frame()
    g = t[t["set"] == "grid"]
    reg = collections.Counter(PF.stagger_regime(g["kernel"], g["rows"], g["n"]))
    assert reg == {"prefill entry, 4-12 CTAs per SM": 6, "prefill entry, > 12 CTAs per SM, rows <= 16K": 6,
                   "prefill entry, > 12 CTAs per SM, rows > 16K": 4, "causal prompts": 4,
                   "decode single 512-thread CTAs, 4-8 CTAs per SM": 6, "controls, <= 3 CTAs per SM": 4}
    from simulator.kernels import topk_trtllm as TK

    dec = g[g["kernel"] == "trt_topk"]
    assert set(TK.block_threads(dec["rows"], dec["n"])) == {512.0} and set(TK.blocks_per_row(dec["rows"], dec["n"])) == {1.0}


def test_staggered_partners_change_nothing_at_three_or_fewer_ctas_per_sm_and_lower_the_price_beyond():
    from hwmodels.spec import load_hardware
    from simulator.calibration import topk_engines as TE
    from simulator.kernels import topk_trtllm as TK

    t = TE._trtllm_frame([("recorded", 390, 9000), ("recorded", 2600, 5000)])
    t["kernel"] = TE.CSV_KERNEL["trtllm_prefill"]
    hw = load_hardware("H200")
    old = TK.STAGGERED_PARTNERS
    try:
        TK.STAGGERED_PARTNERS = False
        before = TE.predict_trtllm(t, hw)
        TK.STAGGERED_PARTNERS = True
        after = TE.predict_trtllm(t, hw)
    finally:
        TK.STAGGERED_PARTNERS = old
    assert np.isclose(after[0], before[0]) and after[1] < before[1]
