"""FlashAttention-3's MLA-absorbed decode (qv, hdim 64 x 512) as SGLang runs DSA over a bf16 cache on Hopper: the
kernel's rules read from hopper/ @ 0251105a (simulator/kernels/fa3.py), its committed grid prices, and the DSA
strategy's `sparse_kernel: fa3`."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from simulator.combo import make_combo
from simulator.kernels import fa3 as K
from simulator.strategies.base import parse_axis


def test_tile_sizes_follow_tile_size_fwd_sm90():
    assert tuple(map(float, K.fa3_tile(64, True, False, 512))) == (64.0, 64.0)      # LargeHeadDimV
    assert tuple(map(float, K.fa3_tile(64, True, False, 256))) == (128.0, 96.0)
    assert tuple(map(float, K.fa3_tile(64, True, False))) == (192.0, 128.0)         # same-dim d 64, paged
    assert tuple(map(float, K.fa3_tile(128, True, False))) == (128.0, 128.0)
    assert tuple(map(float, K.fa3_tile(192, False, True, 128))) == (128.0, 128.0)


def test_the_combine_grid_linearizes_decode_steps_and_scans_batch_groups():
    lin, grid_m, mean_loads, spare = K.combine_scan(np.array([2.0, 3.0, 512.0, 512.0]), np.array([1.0, 1.0, 1.0, 4.0]),
                                                    np.array([128.0, 128.0, 128.0, 128.0]))
    # choose_scheduling_algo: 2 x ceil(total_q / 8) < b x ceil(max_seqlen_q / 8)
    assert lin.tolist() == [False, True, True, False]
    assert grid_m[2] == 512 * 128 / 8 + 512
    assert spare[2] == 2 * 16 + 1                       # the spare CTAs scan all ceil(512 / 32) groups, then num_splits
    assert 2 * 1 + 1 < mean_loads[2] < spare[2]         # real tiles scan up to their own group


def test_more_than_992_requests_take_one_split():
    _, m1 = K.fa3(992.0, 1.0, 2048.0, 16.0, 1.0, 64.0, 2.0, 1.0, 132, dv=512.0, qv=512.0, T_bound=2048.0)
    _, m2 = K.fa3(993.0, 1.0, 2048.0, 16.0, 1.0, 64.0, 2.0, 1.0, 132, dv=512.0, qv=512.0, T_bound=2048.0)
    assert float(m2["splits"]) == 1.0 and float(m2["split_bound"]) > 1.0   # prepare's second CTA: num_splits_dynamic 1
    assert float(m1["split_bound"]) == float(m2["split_bound"])


def test_the_split_bound_reads_the_page_table_width():
    _, short = K.fa3(1.0, 1.0, 256.0, 16.0, 1.0, 64.0, 2.0, 1.0, 132, dv=512.0, qv=512.0)
    _, wide = K.fa3(1.0, 1.0, 256.0, 16.0, 1.0, 64.0, 2.0, 1.0, 132, dv=512.0, qv=512.0, T_bound=2048.0)
    assert float(short["split_bound"]) == 1.0           # 4 key blocks: num_splits_heuristic never splits
    assert float(wide["split_bound"]) > 1.0             # the 2048-wide page table's 32 blocks


def test_grid_2s_committed_prices_reproduce_under_their_terms():
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import fa3_sparse_mla_h200 as S
    p = pd.read_csv(S.DATA_DIR / S.PREDICTION2)
    cand = S.terms_us(p, load_hardware("H200"), S.CANDIDATE2)
    assert np.allclose(cand, p["pred_us"].to_numpy(float), rtol=1e-4)
    first = S.terms_us(p, load_hardware("H200"), S.FIRST_LOOK)
    assert np.allclose(first, p["pred_main_us"].to_numpy(float), rtol=1e-4)


def test_grid_3s_committed_prices_reproduce_the_shipped_model_and_the_one_before():
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import fa3_sparse_mla_h200 as S
    hw = load_hardware("H200")
    for pred, price in ((S.PREDICTION11, S.dense_family_us), (S.PREDICTION12, S.family_us)):
        p = pd.read_csv(S.DATA_DIR / pred)
        assert np.allclose(price(p, hw), p["pred_us"].to_numpy(float), rtol=1e-4)      # shipped after grid 3
        with S._with_qv(S.QV_SHIPPED):
            assert np.allclose(price(p, hw), p["pred_main_us"].to_numpy(float), rtol=1e-4)


def test_the_qv_combine_takes_its_source_grid_and_reads_its_partials_from_the_l2():
    # flash_fwd_combine_launch_template.h: kBlockM 8 rows a CTA at kBlockK 128, x ceil(512 / 128) along V
    launches, m = K.fa3(8.0, 1.0, 2048.0, 128.0, 1.0, 64.0, 2.0, 1.0, 132, dv=512.0, qv=512.0, T_bound=2048.0)
    comb = next(ln for ln in launches if ln.name == "attention_combine")
    assert float(m["splits"]) > 1.0
    assert float(comb.ctas) == np.ceil(8 * 128 / 8) * 4
    assert float(comb.reread_bytes) == float(comb.bytes_read) > 0.0          # the partials the main kernel just wrote
    assert float(comb.hidden_loads) > 0.0                                      # its batch scan precedes the PDL wait
    gqa, _ = K.fa3(8.0, 1.0, 65536.0, 32.0, 8.0, 128.0, 2.0, 16.0, 132)
    g = next(ln for ln in gqa if ln.name == "attention_combine")
    assert float(g.reread_bytes) == 0.0 and float(g.hidden_loads) == 0.0     # the GQA calls keep their fitted terms


def test_a_one_round_qv_call_exposes_its_tile_io():
    one, m1 = K.fa3(1.0, 1.0, 65536.0, 128.0, 1.0, 64.0, 2.0, 1.0, 132, dv=512.0, qv=512.0)
    many, m2 = K.fa3(512.0, 1.0, 2048.0, 128.0, 1.0, 64.0, 2.0, 1.0, 132, dv=512.0, qv=512.0, T_bound=2048.0)
    main1 = next(ln for ln in one if ln.name == "attention")
    main2 = next(ln for ln in many if ln.name == "attention")
    tiles = 2.0 * float(m1["splits"])                    # two 64-row m-blocks of 128 heads
    assert tiles <= 132
    per_tile = 64.0 * ((64 + 512) * 2.0 + 512 * 4.0 + 4.0)   # Q + Qv in, the fp32 partial and its LSE out
    assert np.isclose(float(main1.lone_tile_bytes), per_tile * tiles / 132)
    assert float(np.max(main2.lone_tile_bytes)) == 0.0       # several rounds: the phases overlap other CTAs' streams


def _dsa(hw="H200", kv="bf16", **par):
    c = make_combo(hw, "DeepSeek-V3.2-Exp", kv_dtype=kv, tp=8, launch="graph", attention="dense")
    return replace(c, attention=parse_axis("attention", [{"dsa": {"sparse_kernel": "fa3", **par}}])[0],
                   topk=parse_axis("topk", ["radix"])[0])


def test_the_fa3_decode_prices_fa3s_launches():
    from simulator.pricing import decode_ops
    c = _dsa()
    assert c.attention.refuse(c) is None
    ops, _ = decode_ops(c, np.array([1.0, 256.0]), np.array([32768.0, 32768.0]))
    from hwmodels.opkinds import KINDS
    names = set(np.asarray(ops.names, dtype=object)[ops.name_id])
    assert {"attention_prepare", "attention", "attention_combine"} <= names
    kinds = {KINDS[k] for k in np.unique(ops.kind)}
    assert {"attn_fa3_persist", "attn_prepare_fa3", "attn_combine_fa3"} <= kinds
    assert "attn_flashmla_sparse" not in kinds


@pytest.mark.parametrize("hw,kv,why", [("H200", "fp8", "bf16 cache"), ("B200", "bf16", "Hopper")])
def test_the_fa3_decode_is_refused_where_the_kernel_does_not_run(hw, kv, why):
    c = _dsa(hw, kv)
    assert why in (c.attention.refuse(c) or "")


def test_dsa_under_attention_data_parallelism_prices_a_devices_share():
    """attn_dp 8 at TP8: a device runs the DSA kernels for 1 / 8 of the sequences at all 128 heads (attn_heads_dev)."""
    from hwmodels.roofline import price
    from hwmodels.spec import load_hardware
    from simulator.pricing import decode_ops
    hw = load_hardware("H200")

    def kernels_us(c, batch):
        ops, _ = decode_ops(c, np.array([float(batch)]), np.array([32768.0]))
        names = np.asarray(ops.names, dtype=object)[ops.name_id]
        keep = np.isin(names, ["attention", "attention_combine", "attention_prepare", "attention_last_round"])
        return float((price(ops, hw, "graph") * keep).sum())
    dp = replace(_dsa(), attn_dp=8)
    assert dp.attention.refuse(dp) is None and dp.attn_heads_dev == 128
    tp1 = replace(make_combo("H200", "DeepSeek-V3.2-Exp", kv_dtype="bf16", tp=1, launch="graph", attention="dense"),
                  attention=dp.attention, topk=dp.topk)
    # the same kernels as one device of TP1 running batch / 8
    assert abs(kernels_us(dp, 64) / kernels_us(tp1, 8) - 1.0) < 1e-9


def test_vllms_split_cap_for_its_fa3_calls():
    from simulator.kernels import families as FAM
    np.testing.assert_array_equal(FAM.vllm_fa3_splits(np.array([1.0, 512.0, 600.0]), 1.0), [32.0, 32.0, 0.0])
    _, m = K.fa3(1.0, 1.0, 131072.0, 32.0, 8.0, 128.0, 2.0, 16.0, 132, num_splits=32.0)
    assert float(m["split_bound"]) == 32.0
    # the scheduler metadata once a step: no prepare kernel a call, its price kept as the main kernel's exposed
    # prologue (VLLM_CALL_PROLOGUE); without it, no launch in its place
    launches = FAM.mla_launches("fa3_mla_vllm", 1.0, 1.0, 65536.0, 128.0, 512.0, 64.0, 2.0, 16.0, 132)
    assert bool(np.all(launches[0].where)) == FAM.VLLM_CALL_PROLOGUE
    before = FAM.VLLM_CALL_PROLOGUE
    try:
        FAM.VLLM_CALL_PROLOGUE = False
        launches = FAM.mla_launches("fa3_mla_vllm", 1.0, 1.0, 65536.0, 128.0, 512.0, 64.0, 2.0, 16.0, 132)
        assert not bool(np.any(launches[0].where))
    finally:
        FAM.VLLM_CALL_PROLOGUE = before


def test_sglangs_fp8_mla_call_casts_the_whole_pool_then_runs_the_bf16_qv_kernel():
    from simulator.kernels.families import mla_launches
    pool = 131072.0
    ls = mla_launches("fa3_mla_fp8cast", 8.0, 1.0, 16384.0, 16.0, 512.0, 64.0, 1.0, 1.0, 132, pool_tokens=pool)
    cast = next(ln for ln in ls if ln.name == "kv_pool_cast")
    e = pool * 576
    assert cast.kind == "cast" and float(cast.flops) == e          # PyTorch's up-casting copy, by its element rate
    assert float(cast.bytes_read) == e and float(cast.bytes_written) == 2 * e   # fp8 in, bf16 out
    bf16 = mla_launches("fa3_mla", 8.0, 1.0, 16384.0, 16.0, 512.0, 64.0, 2.0, 1.0, 132)
    mains = [ln for ln in ls if ln.name != "kv_pool_cast"]
    assert [ln.kind for ln in mains] == [ln.kind for ln in bf16]   # the bf16 kernel over the cast copy
    assert np.allclose([float(np.max(ln.bytes_read)) for ln in mains], [float(np.max(ln.bytes_read)) for ln in bf16])


def test_the_pool_is_the_memory_left_over_a_tokens_kv_bytes_and_a_scenario_can_pin_it():
    from simulator.memory import MEMORY_UTILIZATION, kv_pool_tokens, weight_bytes, workspace_bytes
    from simulator.pricing import decode_ops
    c = make_combo("H200", "DeepSeek-V3", kv_dtype="fp8", tp=8, launch="graph", attention="dense", weight_dtype="fp8")
    free = c.hardware.hbm_capacity_bytes * MEMORY_UTILIZATION - weight_bytes(c) - workspace_bytes(c)
    n = float(kv_pool_tokens(c))
    assert n > 0 and np.isclose(n, np.floor(free / c.model.kv_bytes_per_token("fp8")))

    def layout(pool):
        a = parse_axis("attention", [{"dense": {"kernel": "fa3_mla_fp8cast", "page_size": 1, "pool_tokens": pool}}])[0]
        return a._layout(replace(c, attention=a)).kv_pool_tokens
    assert layout(0) == n and layout(131072) == 0.0   # a pinned pool is the strategy's, not the layout's

    def cast_bytes(pool):
        cc = replace(c, attention=parse_axis("attention", [{"dense": {"kernel": "fa3_mla_fp8cast", "page_size": 1,
                                                                      "pool_tokens": pool}}])[0])
        ops, _ = decode_ops(cc, np.array([8.0]), np.array([8192.0]))
        cast = np.asarray(ops.names, dtype=object)[ops.name_id] == "kv_pool_cast"
        return float((ops.bytes_read * ops.count)[cast].sum())
    pinned, default = cast_bytes(131072), cast_bytes(0)
    assert pinned > 0 and default / pinned == pytest.approx(n / 131072, rel=1e-6)


def test_the_fp8_pool_grids_committed_prices_reproduce():
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import fa3_sparse_mla_h200 as S
    from simulator.kernels import families as FAM
    hw = load_hardware("H200")
    g2 = pd.read_csv(S.DATA_DIR / S.PREDICTION14)
    assert np.allclose(S.fp8cast_us(g2, hw), g2["pred_us"].to_numpy(float), rtol=1e-4)
    g1 = pd.read_csv(S.DATA_DIR / S.PREDICTION13)
    before = FAM.POOL_CAST_KIND
    try:
        FAM.POOL_CAST_KIND = "copy"                       # the first look's kind
        assert np.allclose(S.fp8cast_us(g1, hw), g1["pred_us"].to_numpy(float), rtol=1e-4)
    finally:
        FAM.POOL_CAST_KIND = before


def test_flashmlas_fp8_calls_merge_in_the_fp8_extensions_combine():
    from simulator.kernels import flashmla as FM
    fp8, m8 = FM.flashmla(np.array([1.0]), np.array([1.0]), np.array([131072.0]), np.array([16.0]), 512.0, 64.0, 1.0,
                          132)
    comb = [ln for ln in fp8 if ln.name == "attention_combine"]
    live = [ln for ln in comb if bool(np.all(ln.where))]
    assert float(m8["splits"][0]) > 1 and len(live) == 1
    c = live[0]
    assert float(np.ravel(c.ctas)[0]) == 16.0        # a 128-thread CTA per (request, row, head)
    assert float(c.resident) == FM.FM_FP8_COMBINE_RESIDENT
    assert np.isclose(float(np.ravel(c.serial_iters)[0]), float(m8["splits"][0]) * FM.FM_FP8_COMBINE_SPLIT_ITERS)
    bf16, _ = FM.flashmla(np.array([1.0]), np.array([1.0]), np.array([131072.0]), np.array([16.0]), 512.0, 64.0, 2.0,
                          132)
    assert len(bf16) == 2                            # the bf16 call keeps combine.cu's chain


def test_flashmla_dense_fp8_grid_2s_committed_prices_reproduce():
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import flashmla_dense_h200 as FD
    hw = load_hardware("H200")
    p = pd.read_csv(FD.DATA_DIR / FD.PREDICTION3)
    assert np.allclose(FD.family_us(p, hw), p["pred_us"].to_numpy(float), rtol=1e-4)        # shipped
    with FD._with_fp8(FD.FP8_MAIN):
        assert np.allclose(FD.family_us(p, hw), p["pred_main_us"].to_numpy(float), rtol=1e-4)
    g1 = pd.read_csv(FD.DATA_DIR / FD.PREDICTION)
    with FD._with_fp8(FD.FP8_MAIN):                                                           # the first look
        assert np.allclose(FD.family_us(g1, hw), g1["pred_us"].to_numpy(float), rtol=1e-4)


def test_the_fp8_pool_prefill_grids_committed_prices_reproduce():
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import fa3_sparse_mla_h200 as S
    hw = load_hardware("H200")
    p = pd.read_csv(S.DATA_DIR / S.PREDICTION15)
    assert np.allclose(S.fp8cast_prefill_us(p, hw), p["pred_us"].to_numpy(float), rtol=1e-4)
    # the absorbed extend (<= 8192 tokens in the prefill graph) pays the whole pool's cast; FlashMLA's family does not
    assert (p["pred_us"] > p["pred_main_us"]).all()


def test_the_cold_gqa_grids_committed_prices_reproduce_and_its_regimes_hold():
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import fa3_sparse_mla_h200 as S
    p = pd.read_csv(S.DATA_DIR / S.PREDICTION16)
    assert np.allclose(S.gqa_family_us(p, load_hardware("H200"), "fa3"), p["pred_us"].to_numpy(float), rtol=1e-4)
    assert (S.regime16(p) == p["regime"]).all()
    # the harness's warm footprint splits the regimes: the controls past 128 MiB, the short calls below
    fp = S.harness_warm_footprint(p)
    assert (fp[p["regime"].str.startswith("controls")] >= 128 * 2 ** 20).all()
    assert (fp[p["regime"] == "cold decode, warm footprint < 25 MB"] < 25e6).all()


def test_the_fp8_cold_gqa_grids_committed_prices_reproduce_at_fp8_bytes():
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import fa3_sparse_mla_h200 as S
    hw = S.before_fp8_ship(load_hardware("H200"))   # priced before the H200's own fp8 iteration shipped
    p = pd.read_csv(S.DATA_DIR / S.PREDICTION17)
    assert (p["kv_bytes"] == 1).all()
    assert np.allclose(S.gqa_family_us(p, hw, "fa3"), p["pred_us"].to_numpy(float), rtol=1e-4)
    # the same rows at bf16 bytes price otherwise: the column reaches the family
    assert not np.allclose(S.gqa_family_us(p.drop(columns="kv_bytes"), hw, "fa3"), p["pred_us"].to_numpy(float))


def test_the_vllm_gqa_grid3s_committed_prices_reproduce_both_models():
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import fa3_sparse_mla_h200 as S
    hw = S.before_fp8_ship(load_hardware("H200"))   # priced before the H200's own fp8 iteration shipped
    p = pd.read_csv(S.DATA_DIR / S.PREDICTION18)
    assert np.allclose(S.gqa_family_us(p, hw, "fa3_vllm_prologue"), p["pred_us"].to_numpy(float), rtol=1e-4)
    assert np.allclose(S.gqa_family_us(p, hw, "fa3"), p["pred_main_us"].to_numpy(float), rtol=1e-4)
    assert (S.regime18(p) == p["regime"]).all() and set(p["kv_bytes"]) == {1, 2}


def test_the_fp8_cold_grid2s_prices_reproduce_and_the_shipped_h200_is_the_candidate():
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import fa3_sparse_mla_h200 as S
    hw = load_hardware("H200")
    p = pd.read_csv(S.DATA_DIR / S.PREDICTION20)
    assert np.allclose(S.gqa_family_us(p, hw, "fa3"), p["pred_us"].to_numpy(float), rtol=1e-4)   # shipped
    before = S.before_fp8_ship(hw)
    assert np.allclose(S.gqa_family_us(p, before, "fa3"), p["pred_main_us"].to_numpy(float), rtol=1e-4)
    k = "attn_fa3_persist_fp8kv"
    assert hw.efficiency.iter_s[k] == pytest.approx(S.FP8_ITER_SHARE_CANDIDATE * before.efficiency.iter_s[k], rel=1e-4)
    assert k not in hw.efficiency.borrowed_kinds   # the H200 names the kind: its every term from its own file
    # FA3's fp8 prefill tiles keep the H100-SXM's block time on the H200 (their own kind, borrowed)
    pk = "attn_fa3_prefill_fp8kv"
    assert pk in hw.efficiency.borrowed_kinds
    assert hw.efficiency.iter_s[pk] == load_hardware("H100-SXM").efficiency.iter_s[pk] == before.efficiency.iter_s[k]


def test_fa3s_fp8_prefill_tiles_take_their_own_kind_and_decode_rows_do_not():
    from simulator.kernels import fa3 as FA3

    one = np.ones(2)
    pre = FA3.fa3(one, np.array([2048.0, 1.0]), np.array([4096.0, 4096.0]), 32.0, 8.0, 128.0, 1.0, 16.0, 132,
                  causal=np.array([True, False]))[0]
    kinds = {ln.kind: np.asarray(ln.where & np.ones(2, bool)) for ln in pre if ln.where is not None and ln.name == "attention"}
    assert kinds["attn_fa3_prefill_fp8kv"].tolist() == [True, False]
    assert kinds["attn_fa3_persist_fp8kv"].tolist() == [False, True]
