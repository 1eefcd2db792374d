"""Production attention families (simulator/kernels): their plan rules reproduce the launch grids measured on the H100
(hwmodels/calibration/data/production_attention_grids_*.csv), and `attention: dense` prices them."""
import functools

import numpy as np
import pytest

from hwmodels import datafiles as DF
from simulator.kernels import families as FAM
from simulator.kernels import flashinfer as FI
from simulator.kernels import flashmla as FM
from simulator.kernels import triton_engines as TE
from simulator.kernels import xqa as XQ
from simulator.kernels.production import emit

SMS, SMEM = 132, 233472.0


def test_fi_decode_plan_matches_the_measured_grids():
    # padded batch x Hkv of a CUDA-graph plan = resident CTAs per SM x SMs (measured grid_x: 132, 148, 99)
    for hq, kvb, grid_x in ((32, 2.0, 132), (64, 2.0, 148), (32, 1.0, 99)):
        _, info = FI.fi_decode(np.array([1.0]), 16.0, hq, 8.0, 128.0, kvb, 16.0, SMS, SMEM)
        assert info["ctas"][0] == grid_x * 8
    # B = 1, T = 32K: the smallest chunk of >= 8 pages that keeps B x chunks x Hkv within the grid: 16 pages
    _, info = FI.fi_decode(np.array([1.0]), 32768.0, 32.0, 8.0, 128.0, 2.0, 16.0, SMS, SMEM)
    assert info["splits"][0] == 128 and info["chunk_tokens"][0] == 256 and info["keys_per_iter"][0] == 8
    # no split once B x Hkv fills the grid: one CTA per (request, KV head)
    _, info = FI.fi_decode(np.array([1024.0]), 16.0, 32.0, 8.0, 128.0, 2.0, 16.0, SMS, SMEM)
    assert not info["split"][0] and info["active_ctas"][0] == 8192


def test_fi_tc_plan_matches_the_measured_grids():
    # measured grid_x (padded batch) of the tensor-core path at T = 16: B 1 -> 33; B 256 -> 319 / 383 / 367 for
    # G = 4 / 8 / 7; B 1024 -> 1279 / 1535 / 1471
    for B, cases in ((1, ((32, 8, 33),)), (256, ((32, 8, 319), (64, 8, 383), (28, 4, 367))),
                     (1024, ((32, 8, 1279), (64, 8, 1535), (28, 4, 1471)))):
        for hq, hkv, grid_x in cases:
            _, info = FI.fi_tc(np.array([float(B)]), 1.0, 16.0, hq, hkv, 128.0, 2.0, 16.0, SMS, SMEM)
            assert info["ctas"][0] == grid_x * hkv, (B, hq, hkv)


def test_fa2_tiles_follow_the_dispatch():
    tile, per_sm, threads, _ = FI.fa2_tile_kv(np.array([16.0, 16.0, 64.0, 128.0]), 128.0, np.array([2.0, 1.0, 2.0, 2.0]),
                                             SMEM)
    assert list(tile) == [128.0, 256.0, 128.0, 64.0] and set(per_sm) == {2.0} and set(threads) == {128.0}
    assert list(FI.fa2_cta_tile_q(np.array([4, 8, 32, 65]), 128)) == [16.0, 16.0, 64.0, 128.0]


def test_other_families_plan_rules():
    # FlashMLA: 132 / 66 parts for 16 / 128 heads; a one-block request stays in one part (no split)
    _, info = FM.flashmla(np.array([1.0, 1.0]), 1.0, 16.0, np.array([16.0, 128.0]), 512.0, 64.0, 2.0, SMS)
    assert list(info["parts"]) == [132.0, 66.0] and list(info["splits"]) == [1.0, 1.0]
    # XQA multi-block: T // 512 = 64 capped at round(sqrt(8 x 64)) = 23
    assert XQ.xqa_multi_block(1.0, 32768.0, 8.0, SMS) == 23
    # SGLang: 8 splits at B 1, but a 16-token request fills only the first
    _, info = TE.triton_sgl(np.array([1.0, 1.0]), np.array([16.0, 32768.0]), 32.0, 8.0, 128.0, 2.0, SMS, SMEM)
    assert list(info["splits"]) == [1.0, 8.0]


def _step_attention_us(kernel, model, B, T, **kw):
    from hwmodels.roofline import price
    from hwmodels.spec import load_hardware
    from simulator.combo import make_combo
    from simulator.pricing import decode_ops

    hw = load_hardware("H100-SXM")
    combo = make_combo(hw, model, kv_dtype="bf16", weight_dtype="bf16", launch="graph",
                       attention={"dense": {"kernel": kernel}}, **kw)
    ops, _ = decode_ops(combo, np.asarray(B, float), np.asarray(T, float))
    names = np.asarray(ops.names, dtype=object)[ops.name_id]
    t = price(ops, hw, "graph") * np.isin(names, ["attention", "attention_merge", "attention_combine"])
    return np.bincount(ops.setting, weights=t, minlength=len(B)) * 1e6


def test_dense_prices_the_per_sequence_cost():
    # at a 16-token context the tensor-core path's time grows with the batch alone (prologue loads in waves)
    us = _step_attention_us("fi_tc", "Llama-3.1-8B", [256.0, 1024.0], [16.0, 16.0])
    assert 3.0 < us[1] / us[0] < 4.5
    for k in ("fa3", "fa4", "xqa", "triton_vllm", "triton_sgl", "flashinfer", "fi_decode"):
        assert np.all(_step_attention_us(k, "Llama-3.1-8B", [1.0, 64.0], [4096.0, 4096.0]) > 0)
    assert np.all(_step_attention_us("flashmla", "DeepSeek-V3", [1.0, 64.0], [4096.0, 4096.0], tp=8) > 0)


def test_refusals():
    from hwmodels.errors import SparsesimError
    from hwmodels.spec import load_hardware
    from simulator.combo import make_combo

    hw = load_hardware("H100-SXM")
    assert "fi_decode" in (FAM.refuse("fi_decode", 7.0) or "")
    assert FAM.refuse("flashmla", 4.0, mla=False) and FAM.refuse("fa3", None, mla=True)
    llama = make_combo(hw, "Llama-3.1-8B", kv_dtype="bf16", weight_dtype="bf16", attention={"dense": {"kernel": "flashmla"}})
    assert "MLA" in llama.attention.refuse(llama)
    ds = make_combo(hw, "DeepSeek-V3", kv_dtype="bf16", weight_dtype="fp8", tp=8, attention={"dense": {"kernel": "fi_mla"}})
    assert ds.attention.refuse(ds) is None
    with pytest.raises(SparsesimError):
        make_combo(hw, "Llama-3.1-8B", kv_dtype="bf16", weight_dtype="bf16", attention={"dense": {"kernel": "fi_x"}})


def test_emit_counts_idle_ctas_and_prologue_waves():
    from simulator.ops import OpBuilder

    b = OpBuilder(1)
    launches, _ = FI.fi_decode(np.array([1.0]), 16.0, 32.0, 8.0, 128.0, 2.0, 16.0, SMS, SMEM, pdl=False)
    emit(b, launches, SMS)
    ops = b.build()
    att = np.asarray(ops.names, dtype=object)[ops.name_id] == "attention"
    # 8 active CTAs in one wave: 3 prologue loads, plus one load for the wave of 1048 idle CTAs, plus the CTA launch of
    # the 3 CTAs after the first on the busiest SM (the measured dispatch puts 4 on one: FI_DECODE_CTA_LAUNCH_SHARE)
    launch = 3.0 * FI.FI_DECODE_CTA_LAUNCH_SHARE
    assert ops.parallel_units[att][0] == 8 and abs(ops.sync_steps[att][0] - (4 + launch)) < 1e-9
    # the decode call's default is PDL (FI_DECODE_PDL): the first wave's 2 pre-wait loads are hidden
    b = OpBuilder(1)
    emit(b, FI.fi_decode(np.array([1.0]), 16.0, 32.0, 8.0, 128.0, 2.0, 16.0, SMS, SMEM)[0], SMS)
    ops = b.build()
    att = np.asarray(ops.names, dtype=object)[ops.name_id] == "attention"
    assert FI.FI_DECODE_PDL and abs(ops.sync_steps[att][0] - (2 + launch)) < 1e-9


def test_engine_defaults_and_family_table():
    assert FAM.engine_default_kernel("vllm", "hopper", mla=False) == "fa3"
    assert FAM.engine_default_kernel("tensorrt-llm", "hopper", mla=False) == "xqa"
    # MLA on Hopper: FA3's qv kernel with a bf16 cache (SGLang's fa3 backend, vLLM's FLASH_ATTN_MLA), FlashMLA with fp8
    assert FAM.engine_default_kernel("sglang", "hopper", mla=True) == "fa3_mla"
    assert FAM.engine_default_kernel("vllm", "hopper", mla=True) == "fa3_mla_vllm"
    assert FAM.engine_default_kernel("vllm", "hopper", mla=True, kv_dtype="fp8") == "flashmla"
    # SGLang keeps its fa3 backend over an fp8 MLA cache and casts the layer's pool to bf16 first (forward_decode)
    assert FAM.engine_default_kernel("sglang", "hopper", mla=True, kv_dtype="fp8") == "fa3_mla_fp8cast"
    table = FAM.family_table()
    assert set(FAM.FAMILIES) - {"flashinfer"} <= set(table)
    for fam in table.values():
        assert fam["source"] and fam["rules"] and fam["measured"]


def _campaign():
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP

    f, g = FP.latest(FP.DATA_DIR)
    return FP, FP.load(f), g, load_hardware("H100-SXM")


@functools.lru_cache(maxsize=1)
def _campaign_fit():
    """(FP, hw, eff, meta): the whole production-attention fit of the committed campaign, run once (cached) for the
    three tests that only read it (~9 s each time)."""
    import pandas as pd

    FP, df, g, hw = _campaign()
    eff, meta = FP.fit(df, hw, pd.read_csv(g) if g is not None else None)
    return FP, hw, eff, meta


def _prices_without_hiding(FP, ops, hw, n, monkeypatch):
    from hwmodels import roofline as R

    with monkeypatch.context() as m:
        m.setattr(R, "CTA_FIXED_HIDDEN", ())
        return FP.predict_us(ops, hw, hw.efficiency, n)


def test_fa2_prefill_hides_every_wave_epilogue_but_the_last(monkeypatch):
    # B 256 x T 256 (8 waves, bandwidth-bound): the hidden form saves 7 of the 8 per-wave epilogues; B 1 (one wave)
    # prices exactly as the additive form
    from hwmodels import roofline as R
    from hwmodels.roofline import price
    from hwmodels.spec import load_hardware
    from simulator.ops import MaskedBuilder, OpBuilder

    hw = load_hardware("H100-SXM")
    b = OpBuilder(2)
    launches, _ = FI.fi_tc(np.array([256.0, 1.0]), 1.0, 256.0, 32.0, 8.0, 128.0, 2.0, 16.0, SMS, SMEM)
    emit(MaskedBuilder(b, np.array([True, True])), launches[:1], SMS)
    ops = b.build()
    new = price(ops, hw, "graph")
    monkeypatch.setattr(R, "CTA_FIXED_HIDDEN", ())
    old = price(ops, hw, "graph")
    cta = hw.efficiency.cta_fixed_s["attn_fi_prefill"]
    assert new[1] == pytest.approx(old[1], rel=1e-12)
    assert old[0] - new[0] == pytest.approx(7.0 * cta, rel=1e-6)


def test_fa2_prefill_committed_fit_is_the_fit_of_the_committed_csv():
    # the shipped attn_fi_prefill(_fp8kv) terms are what the middle-regime fit gives under the hidden epilogue, and
    # the per-wave epilogue is still the one borrowed from attn_fa2 (no new parameter)
    FP, hw, eff, meta = _campaign_fit()
    e = hw.efficiency
    for kind in ("attn_fi_prefill", "attn_fi_prefill_fp8kv"):
        assert e.memory[kind] == pytest.approx(eff.memory[kind], abs=1e-4)
        assert e.compute[kind] == pytest.approx(eff.compute[kind], abs=1e-4)
        assert e.iter_s[kind] * 1e6 == pytest.approx(eff.iter_s[kind] * 1e6, abs=1e-4)
        assert e.fixed_s[kind] * 1e6 == pytest.approx(eff.fixed_s[kind] * 1e6, abs=1e-4)
        assert e.cta_fixed_s[kind] == pytest.approx(e.cta_fixed_s["attn_fa2"], rel=1e-3)
        assert e.cta_serial_s[kind] * 1e6 == pytest.approx(eff.cta_serial_s[kind] * 1e6, abs=1e-4)
    # the serial CTA time is fitted on the fp8 kind's rows and the bf16 kind takes it (CTA_SERIAL_FROM)
    assert eff.cta_serial_s["attn_fi_prefill_fp8kv"] > 0.0
    assert eff.cta_serial_s["attn_fi_prefill"] == pytest.approx(eff.cta_serial_s["attn_fi_prefill_fp8kv"], rel=1e-12)
    assert "cta_serial_us.attn_fi_prefill_fp8kv" in meta["fi_prefill_fp8kv"]["params"]
    assert "cta_serial_us.attn_fi_prefill" not in meta["fi_prefill"]["params"]


def test_fp8_prefill_columns_shared_by_the_busiest_sms_ctas():
    # fp8 K/V: a CTA alone on its SM walks its fragment columns in half the full-residency time (k / slots, 2 slots);
    # a launch with at least 2 CTAs per SM pays the whole column chain; bf16 tiles share only their MMAs
    # (FI_TC_MMA_SHARED, test_fa2_bf16_mmas_are_shared_by_the_busiest_sms_ctas)
    B = np.array([2.0, 400.0])
    for kvb, fp8 in ((1.0, True), (2.0, False)):
        launches, info = FI.fi_tc(B, 4.0, 72.0, 32.0, 8.0, 128.0, kvb, 16.0, SMS, SMEM)
        ln = launches[0]
        iters = np.ceil(info["chunk_tokens"] / info["cta_tile_kv"])
        frags = FI.fa2_fp8_frags(info["cta_tile_q"], info["cta_tile_kv"])
        assert list(info["busiest_sm_ctas"]) == [1.0, 2.0]
        # B 400: 3200 CTAs, 12 whole waves + 32 CTAs, whose last wave runs a CTA per SM (FI_TC_LAST_WAVE_SHARE)
        w, kl = info["waves"], info["last_wave_sm_ctas"]
        assert list(w) == [1.0, 13.0] and list(kl) == [1.0, 1.0]
        if fp8:
            assert np.allclose(ln.serial_iters, iters * frags * ((w - 1.0) * np.array([0.5, 1.0]) + kl / 2.0) / w)
        else:
            args = (iters, info["cta_tile_q"], info["cta_tile_kv"], 128.0, 2.0)
            assert np.allclose(ln.serial_iters, ((w - 1.0) * FI.fi_tc_bf16_steps(*args, info["busiest_sm_ctas"])
                                                 + FI.fi_tc_bf16_steps(*args, kl)) / w)


def test_pdl_hides_the_first_waves_pre_wait_loads_only_when_asked():
    # FI_PDL_GRAPH is off (measured in effect, but priced it did worse on the blind grid: flashinfer.py); with pdl the
    # decode kernel hides 2 of its 3 prologue loads and the merge 1 of 2, once per launch (the first wave's)
    from simulator.ops import MaskedBuilder, OpBuilder

    assert FI.FI_PDL_GRAPH is False
    B = np.array([1.0, 2048.0])
    steps = {}
    for pdl in (False, True):
        launches, _ = FI.fi_decode(B, 64.0, 32.0, 8.0, 128.0, 2.0, 16.0, SMS, SMEM, pdl=pdl)
        assert [ln.hidden_loads for ln in launches] == ([0.0, 0.0] if not pdl else [2.0, 1.0])
        b = OpBuilder(2)
        emit(MaskedBuilder(b, np.array([True, True])), launches[:1], SMS)
        steps[pdl] = b.build().sync_steps
    assert np.allclose(steps[False] - steps[True], 2.0)


def test_hidden_epilogue_moves_fit_shapes_little_and_other_families_not(monkeypatch):
    # same committed terms, hidden vs additive epilogue: the fit regime's FA2 prefill shapes (1-2 waves) move by at
    # most 6 % (median 0: one wave is unchanged); every other family's rows but FlashInfer MLA's do not move at all
    FP, df, _, hw = _campaign()
    ops = FP.build_ops(df, hw.units, float(hw.smem_per_unit_bytes))
    new = FP.predict_us(ops, hw, hw.efficiency, len(df))
    old = _prices_without_hiding(FP, ops, hw, len(df), monkeypatch)
    fam = df["family"].to_numpy()
    prefill = np.isin(fam, ["fi_tc", "fi_verify"])
    moved = np.abs(new / old - 1.0)
    fit = FP.fit_rows(df) & prefill
    assert fit.sum() == 72
    assert moved[fit].max() <= 0.06 and np.median(moved[fit]) < 1e-9
    # FlashInfer MLA hides its per-item epilogue too (its items priced as waves): a one-item shape does not move
    mla = fam == "fi_mla"
    assert moved[~prefill & ~mla].max() < 1e-12
    one = mla & (FI.fi_mla_plan(df["batch"].to_numpy(float), df["q_rows"].to_numpy(float),
                                df["context"].to_numpy(float), df["heads"].to_numpy(float), SMS)["items"] == 1.0)
    assert one.sum() > 10 and moved[one].max() < 1e-12


def test_fi_mla_plan_follows_mla_plan_and_one_cooperative_launch():
    # MLAPlan: 16 heads -> one CTA per cluster, 132 clusters; 128 heads -> clusters of 2 CTAs, 66 (measured grids
    # (1, 132) and (2, 66)); the merge runs inside the same kernel after grid.sync(): one launch per call
    launches, pl = FI.fi_mla(np.array([1.0, 1.0]), 1.0, 16.0, np.array([16.0, 128.0]), 512.0, 64.0, 2.0, 1.0, SMS)
    assert list(pl["cluster"]) == [1.0, 2.0] and list(pl["clusters"]) == [132.0, 66.0] and len(launches) == 1
    # B 1024, T 16, 16 heads: kv_len_limit f(ceil(16384 / 132) = 125) = 256, no split, 1024 one-stage items dealt
    # round-robin by the min-heap: 8 on the busiest cluster
    _, pl = FI.fi_mla(np.array([1024.0]), 1.0, 16.0, 16.0, 512.0, 64.0, 2.0, 1.0, SMS)
    assert pl["kv_len_limit"][0] == 256.0 and not pl["split"][0] and pl["items"][0] == 8.0 and pl["stages"][0] == 8.0
    # B 1, T 1024: limit 32 -> 32 pieces of 32 tokens on 32 clusters, each one 64-token stage, merged in-kernel
    _, pl = FI.fi_mla(np.array([1.0]), 1.0, 1024.0, 16.0, 512.0, 64.0, 2.0, 1.0, SMS)
    assert pl["pieces"][0] == 32.0 and pl["items"][0] == 1.0 and pl["stages"][0] == 1.0 and pl["split"][0]


def test_flashmla_scheduler_replay_and_combine_launch():
    # get_mla_metadata: 1024 one-block requests over 132 parts: payload ceil(6144 / 132) + 5 = 52 -> 8 whole requests
    # per part (6 units each), none split, 128 parts used
    assert FM.flashmla_schedule(1024, 1, 132)[:4] == (8, 8, 128, 1)
    # one 16-block request over 132 parts: payload 6 -> 1 block per part, 16 parts, split 16 ways
    assert FM.flashmla_schedule(1, 16, 132)[2:5] == (16, 16, 1)
    launches, info = FM.flashmla(np.array([256.0, 256.0]), 1.0, np.array([16.0, 64.0]), 16.0, 512.0, 64.0, 2.0, SMS)
    k1, k2 = launches
    # a 16-token request loads its whole 64-token block (one TMA tile): the same K/V bytes as a 64-token one, but zeroes
    # the block's 48 out-of-bound V rows in shared memory (fill_oob_V): FM_OOB_TOKEN_S each, per request of the part
    assert k1.bytes_read[0] == k1.bytes_read[1]
    oob, reqs = np.asarray(k1.prologue_loads), info["requests_per_part"]
    assert reqs[0] == reqs[1] == 2.0 and np.isclose(oob[0] - oob[1], 2.0 * 48.0 * FM.FM_OOB_TOKEN_S / FM.LOAD_S)
    # the combine kernel (grid B x ceil(16 / 8) = 512 CTAs) is launched with PDL: with nothing split every CTA exits
    # before its grid-dependency wait, under the MLA kernel's tail, so no combine launch is priced (FM_COMBINE_PDL)
    assert np.all(np.asarray(k2.idle) == 512.0) and np.all(np.asarray(k2.ctas) == 0.0)
    assert not np.any(k2.where) and k2.hidden_loads == 1.0
    # a split call keeps its combine, the num_splits load hidden under the MLA kernel's tail
    launches, info = FM.flashmla(np.array([1.0]), 1.0, np.array([1024.0]), 16.0, 512.0, 64.0, 2.0, SMS)
    assert np.all(launches[1].where) and info["split_requests"][0] == 1.0


def test_fi_mla_merge_row_pays_one_more_link():
    # B 4, T 56, 64 heads: one CTA per cluster, limit 32 -> 2 pieces per request, one merge CTA of 64 rows per request
    # (16 row iterations of 4 rows), each row 2 piece links + FI_MLA_MERGE_ROW_LINKS (DevicePersistentMergeStates)
    _, pl = FI.fi_mla(np.array([4.0]), 1.0, 56.0, 64.0, 512.0, 64.0, 2.0, 1.0, SMS)
    assert pl["per_tile"][0] == 2.0 and pl["merge_iters"][0] == 16.0
    assert pl["merge_loads"][0] == 16.0 * (2.0 + FI.FI_MLA_MERGE_ROW_LINKS) == 48.0


def test_sgl_triton_pipeline_prologue():
    # a one-iteration program (T 16): no steady-state iteration, its tile's loads in the pipeline prologue
    launches, info = TE.triton_sgl(np.array([1.0, 1.0]), np.array([16.0, 32768.0]), 32.0, 8.0, 128.0, 2.0, SMS, SMEM)
    k1 = launches[0]
    assert list(info["iters"]) == [1.0, 128.0] and list(np.asarray(k1.serial_iters)) == [0.0, 127.0]
    assert float(np.asarray(k1.prologue_loads)) == TE.SGL_PROLOGUE_LOADS + TE.SGL_PIPELINE_PROLOGUE_LOADS == 5.0


def test_fresh_grid_predictions_join_every_measured_shape():
    # the fresh grid's predictions (committed before the measurement) cover every measured fresh shape, and no fresh
    # shape is one of the campaign's
    from simulator.calibration import fit_production_attention as FP

    fr, commit = FP.fresh_errors(FP.DATA_DIR)
    meas = FP.load(sorted(DF.glob(FP.DATA_DIR, FP.FRESH_GLOB))[-1])
    assert commit and len(fr) == len(meas) > 0 and np.isfinite(fr["pred_us"]).all()
    camp = FP.load(FP.latest(FP.DATA_DIR)[0])
    keys = ["family", "model", "dtype", "batch", "context", "page_size", "q_rows"]
    assert not set(map(tuple, fr[keys].to_numpy().tolist())) & set(map(tuple, camp[keys].to_numpy().tolist()))


def test_fi_mla_merge_is_a_serial_chain_of_partial_loads():
    # 128 heads, B 12, T 72: MLAPlan limit f(ceil(12 x 72 / 66) = 14) = 64 -> 2 pieces per tile, num_qo_chunks
    # = 72 x 2 // 64 = 2 merge CTAs per tile of 128 rows -> 64 rows each = 16 serial iterations of 4 rows, each a
    # chain of 2 partial loads + FI_MLA_MERGE_ROW_LINKS priced at the L2 latency's share of a dependent load
    launches, pl = FI.fi_mla(np.array([12.0, 12.0]), 1.0, np.array([72.0, 16.0]), 128.0, 512.0, 64.0, 2.0, 1.0, SMS)
    assert pl["per_tile"][0] == 2.0 and pl["merge_rows"][0] == 64.0 and pl["merge_iters"][0] == 16.0
    links = 16.0 * (2.0 + FI.FI_MLA_MERGE_ROW_LINKS)
    assert pl["merge_loads"][0] == links and not pl["split"][1] and pl["merge_loads"][1] == 0.0
    loads = np.asarray(launches[0].prologue_loads)
    waves = np.asarray(pl["waves"])
    fill = FI.fi_mla_fill_loads(pl["first_tokens"], 576.0, 2.0)
    merge = (loads - FI.FI_PROLOGUE_LOADS) * waves - fill
    assert merge[0] == pytest.approx(2.0 + links * FI.FI_MLA_MERGE_LOAD_SHARE) and merge[1] == pytest.approx(1.0)


def test_fi_mla_fill_scales_with_the_first_stage_tokens(monkeypatch):
    # 16 heads, B 64 (one item per cluster, unsplit): the first stage holds min(T, 64) valid tokens, so the per-item
    # fill grows from T 16 to T 64 and stays there for longer items; with the term off (rate inf) nothing is added
    B, T = np.full(4, 64.0), np.array([16.0, 48.0, 64.0, 256.0])
    launches, pl = FI.fi_mla(B, 1.0, T, 16.0, 512.0, 64.0, 2.0, 1.0, SMS)
    assert np.array_equal(pl["items"], np.ones(4)) and np.array_equal(pl["first_tokens"], [16.0, 48.0, 64.0, 64.0])
    monkeypatch.setattr(FI, "FI_MLA_FILL_RATE_SM", float("inf"))
    off = np.asarray(FI.fi_mla(B, 1.0, T, 16.0, 512.0, 64.0, 2.0, 1.0, SMS)[0][0].prologue_loads)
    fill = np.asarray(launches[0].prologue_loads) - off
    assert np.all(off == off[0]) and fill[0] < fill[1] < fill[2] == pytest.approx(fill[3])
    assert fill[0] == pytest.approx(16.0 * 576.0 * 2.0 / 42.5e9 / FI.FI_MLA_LOAD_S)


def _campaign_script():
    """lab/kernels/measure_production_attention.py (beside tests/: a script run by path, not installed) as a module,
    for its shape grids."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "measure_production_attention", Path(__file__).resolve().parents[1] / "lab/kernels/measure_production_attention.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_mla_merge_grid_is_new_and_predicted():
    # the MLA merge grid's shapes are in neither the campaign's nor the fresh grid's rows, all split into 2-4 pieces,
    # and every one has a committed prediction

    import pandas as pd

    from simulator.calibration import fit_production_attention as FP

    m = _campaign_script()
    sh = pd.DataFrame(m.shapes("fi_mla", "mla_merge"))
    keys = ["heads", "batch", "context"]
    seen = set()
    for f in (FP.latest(FP.DATA_DIR)[0], sorted(DF.glob(FP.DATA_DIR, FP.FRESH_GLOB))[-1]):
        d = FP.load(f)
        d = d[d["family"] == "fi_mla"]
        seen |= set(map(tuple, d[keys].astype(float).to_numpy().tolist()))
    assert not set(map(tuple, sh[keys].astype(float).to_numpy().tolist())) & seen
    pl = FI.fi_mla_plan(sh["batch"].to_numpy(float), 1.0, sh["context"].to_numpy(float), sh["heads"].to_numpy(float),
                        SMS)
    assert pl["split"].all() and (pl["per_tile"] >= 2).all() and (pl["per_tile"] <= 4).all()
    pr = pd.read_csv(DF.resolve(FP.DATA_DIR / "production_attention_mla_merge_predictions.csv"))
    assert len(pr.merge(sh, on=keys)) == len(sh) and np.isfinite(pr["pred_us"]).all()


def test_sgl_idle_programs_load_from_l2_and_fp8_is_its_own_kind():
    from simulator.ops import OpBuilder

    # B 256, T 16: one split per request, 256 x 8 working programs and 7 x that many idle ones
    launches, info = TE.triton_sgl(np.array([256.0, 256.0]), 16.0, 32.0, 8.0, 128.0, np.array([2.0, 1.0]), SMS, SMEM)
    kinds = [ln.kind for ln in launches if ln.name == "attention"]
    assert kinds == ["attn_triton_sgl", "attn_triton_sgl_fp8kv"]
    k1 = launches[0]
    assert np.all(np.asarray(k1.idle) == 256.0 * 8.0 * 7.0)
    assert k1.idle_share == pytest.approx(0.1431 / 0.3494)
    b = OpBuilder(2)
    emit(b, launches, SMS)
    ops = b.build()
    att = (np.asarray(ops.names, dtype=object)[ops.name_id] == "attention") & (ops.setting == 0)
    slots = float(np.asarray(k1.slots).ravel()[0])
    waves = np.ceil(2048.0 / (SMS * slots))
    idle_waves = np.ceil(14336.0 / (SMS * slots))
    assert ops.sync_steps[att][0] == pytest.approx(waves * 5.0 + idle_waves * TE.SGL_IDLE_LOAD_SHARE)


def test_fi_mla_merge_link_share_is_the_fit_rows_minimum():
    # the module's merge link share is the best of its neighbours on the campaign's fit rows (merge_share_scan)
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP

    f, g = FP.latest(FP.DATA_DIR)
    df = FP.load(f)
    s = FI.FI_MLA_MERGE_LOAD_SHARE
    scan = dict(FP.merge_share_scan(df, load_hardware("H100-SXM"), pd.read_csv(g), shares=(s - 0.05, s, s + 0.05)))
    # with the per-item first-stage fill (FI_MLA_FILL_RATE_SM) the scan is flat between 0.60 and 0.65 (rms log error
    # 0.06271 / 0.06266): the share kept is within 0.1 % of the best neighbour's error
    assert scan[s] < 1.001 * min(scan[s - 0.05], scan[s + 0.05]) and FI.FI_MLA_MERGE_LOAD_SHARE == s
    assert scan[s] < scan[s - 0.05]


def test_fresh_mla_grid_is_new_and_both_predictions_cover_it():
    # the fresh_mla grid's shapes are in none of the earlier grids' rows, and each was priced (committed before the
    # device run) by the revised model and by the model at 1081e97; the measured rows join both

    import pandas as pd

    from simulator.calibration import fit_production_attention as FP

    m = _campaign_script()
    sh = pd.DataFrame([s for p in ("fi_mla", "flashmla", "sgl_triton") for s in m.shapes(p, "fresh_mla")])
    keys = ["family", "model", "dtype", "batch", "context", "q_rows"]
    seen = set()
    for f in DF.glob(FP.DATA_DIR, "production_attention_*nvidia*.csv"):
        if "_grids" in f.name or "fresh_mla" in f.name or "sdpa" in f.name:
            continue
        d = FP.load(f)
        seen |= set(map(tuple, d[keys].astype({"batch": float, "context": float, "q_rows": float}).to_numpy().tolist()))
    mine = set(map(tuple, sh[keys].astype({"batch": float, "context": float, "q_rows": float}).to_numpy().tolist()))
    assert len(mine) == len(sh) == 192 and not mine & seen
    from simulator.calibration.blind_grids import blind_errors

    j, name = blind_errors(FP, "production_attention_fresh_mla_nvidia*.csv", "production_attention_fresh_mla_predictions.csv",
                           "production_attention_fresh_mla_predictions_1081e97.csv")
    assert name and len(j) == len(sh) and np.isfinite(j["err"]).all() and np.isfinite(j["err_before"]).all()
    assert j["model_commit"].nunique() == 1


def test_fi_decode_crowding_follows_the_measured_dispatch():
    # (132, 8) graph grid, 8 resident per SM (the probe's residency): 8 active columns -> 64 CTAs on 24 SMs, at most 4
    # on one; 32 columns -> 256 CTAs, 8 on one (block_placement_*.csv); all 132 -> 8
    k = FI.fi_decode_crowding(np.array([8.0, 32.0, 132.0]), 132.0, 8.0, 8.0, SMS)
    assert list(k) == [4.0, 8.0, 8.0]
    # a kernel of another residency (fp8 K/V: 6 per SM) or a grid never probed: the even spread ceil(CTAs / SMs)
    k = FI.fi_decode_crowding(np.array([8.0, 32.0]), 99.0, 8.0, 6.0, SMS)
    assert list(k) == [1.0, 2.0]
    assert float(FI.fi_decode_crowding(40.0, 200.0, 4.0, 8.0, SMS)) == 2.0
    # the (264, 4) graph grid at 8 per SM: the even spread without its probed placement, 4 on the busiest SM with it
    # (FI_GRAPH_PLACEMENT, fi_graph_placement_*.csv)
    placed = FI.FI_GRAPH_PLACEMENT
    try:
        FI.FI_GRAPH_PLACEMENT = False
        assert float(FI.fi_decode_crowding(40.0, 264.0, 4.0, 8.0, SMS)) == 2.0
        FI.FI_GRAPH_PLACEMENT = True
        assert float(FI.fi_decode_crowding(40.0, 264.0, 4.0, 8.0, SMS)) == 4.0
    finally:
        FI.FI_GRAPH_PLACEMENT = placed


def test_fi_decode_prices_issue_on_the_busiest_sm():
    # B 1, T 1024 bf16: 8 chunks x 8 KV heads = 64 CTAs, 4 on the busiest SM against 1 for an even spread: the kernel's
    # arithmetic is charged 4x (crowd); B 256 (no split, 2 waves): no crowding
    B = np.array([1.0, 256.0])
    launches, info = FI.fi_decode(B, 1024.0, 32.0, 8.0, 128.0, 2.0, 16.0, SMS, SMEM)
    assert list(info["crowd"]) == [4.0, 1.0] and list(info["busiest_sm_ctas"])[0] == 4.0
    flops = 2.0 * B * 32.0 * 1024.0 * 256.0
    np.testing.assert_allclose(launches[0].flops, flops * info["crowd"])
    # and the crowding makes the 64-CTA call slower than the same CTAs spread evenly would be
    from hwmodels.roofline import price
    from hwmodels.spec import load_hardware
    from simulator.ops import MaskedBuilder, OpBuilder

    hw = load_hardware("H100-SXM")
    ln = launches[0]
    prices = []
    for f in (ln.flops, flops):
        b = OpBuilder(2)
        ln.flops = f
        emit(MaskedBuilder(b, np.array([True, True])), [ln], SMS)
        prices.append(price(b.build(), hw, "graph"))
    assert prices[0][0] > prices[1][0] and prices[0][1] == pytest.approx(prices[1][1])


def test_flashinfer_fixed_terms_are_not_fitted():
    # FIXED_ZERO: the FlashInfer kinds' per-kernel fixed time is 0 in the fit and in the shipped file, the other
    # production kinds keep a fitted one
    FP, hw, eff, meta = _campaign_fit()
    for kind in FP.FIXED_ZERO:
        assert eff.fixed_s[kind] == 0.0 and hw.efficiency.fixed_s[kind] == 0.0
        assert not any(p.startswith(f"fixed_us.{kind}") for m in meta.values() if isinstance(m, dict)
                       for p in m.get("params", {}))
    assert any(p == "fixed_us.attn_fi_mla" for p in meta["fi_mla"]["params"])


def test_fa2_fp8_chain_counts_each_warps_fragment_columns():
    # prefill.cuh: a warp converts NUM_MMA_KV 16-key fp8 fragment columns per KV tile: 4 at a 16-row Q tile (256-token
    # tiles over 4 KV warps), 8 at 64 rows (128 tokens, one KV warp), 4 at 128 rows (64 tokens); bf16 keeps one step per
    # tile
    ctq = np.array([16.0, 64.0, 128.0])
    tile, _, _, _ = FI.fa2_tile_kv(ctq, 128.0, 1.0, SMEM)
    assert list(tile) == [256.0, 128.0, 64.0]
    assert list(FI.fa2_fp8_frags(ctq, tile)) == [4.0, 8.0, 4.0]
    # B 1 q 1 (16-row tile) and B 4 q 4 (64-row tile), T 4096: the fp8 launch walks tiles x columns
    for B, q, cols in ((1.0, 1.0, 4.0), (4.0, 4.0, 8.0)):
        l8, i8 = FI.fi_tc(B, q, 4096.0, 32.0, 8.0, 128.0, 1.0, 16.0, SMS, SMEM)
        l16, i16 = FI.fi_tc(B, q, 4096.0, 32.0, 8.0, 128.0, 2.0, 16.0, SMS, SMEM)
        iters8 = np.ceil(i8["chunk_tokens"] / i8["cta_tile_kv"])
        assert l8[0].kind == "attn_fi_prefill_fp8kv" and float(l8[0].serial_iters) == float(iters8 * cols)
        i16_tiles = np.ceil(i16["chunk_tokens"] / i16["cta_tile_kv"])
        assert np.allclose(l16[0].serial_iters, FI.fi_tc_bf16_steps(i16_tiles, i16["cta_tile_q"], i16["cta_tile_kv"],
                                                                   128.0, 2.0, i16["busiest_sm_ctas"]))


def test_fa2_bf16_chain_is_the_later_tiles_waits_and_mmas(monkeypatch):
    # prefill.cuh: one K and one V shared-memory stage, so every tile after a CTA's first waits on two tile loads and
    # issues its warps' MMA blocks; in DRAM-latency units; a one-tile CTA adds nothing; off = one step per tile
    ctq = np.array([16.0, 64.0, 128.0])
    tile, _, _, _ = FI.fa2_tile_kv(ctq, 128.0, 2.0, SMEM)
    assert list(tile) == [128.0, 128.0, 64.0]
    assert np.allclose(FI.fi_tc_bf16_steps(1.0, ctq, tile, 128.0, 2.0), 0.0)
    one = FI.fi_tc_bf16_steps(2.0, ctq, tile, 128.0, 2.0)
    load = 1.0 + tile * 128.0 * 2.0 / (FI.FI_TC_TILE_RATE_SM * FI.FI_TC_LOAD_S)
    blocks = np.array([2.0, 8.0, 8.0])
    mma = blocks * 4.0 * 16.0 * 16.0 * 128.0 / FI.FI_TC_WARP_MMA_FLOPS / FI.FI_TC_LOAD_S
    assert np.allclose(one, 2.0 * load + mma)
    assert np.allclose(FI.fi_tc_bf16_steps(4.0, ctq, tile, 128.0, 2.0), 3.0 * one)
    monkeypatch.setattr(FI, "FI_TC_BF16_TILE_WAITS", False)
    assert np.allclose(FI.fi_tc_bf16_steps(3.0, ctq, tile, 128.0, 2.0), 3.0)


def test_fa2_bf16_mmas_are_shared_by_the_busiest_sms_ctas(monkeypatch):
    # FI_TC_MMA_SHARED: a CTA with k - 1 co-resident neighbours issues its tile's MMAs at 1 / k of the one-CTA rate, the
    # exposed share FI_TC_MMA_SHARE_EXPOSED of the added time on its chain; the waited loads stay its own; k = 1 and
    # one-tile CTAs as before; off = every CTA at the one-CTA rate
    ctq = np.array([16.0, 64.0, 128.0])
    tile, _, _, _ = FI.fa2_tile_kv(ctq, 128.0, 2.0, SMEM)
    one = FI.fi_tc_bf16_steps(2.0, ctq, tile, 128.0, 2.0, 1.0)
    two = FI.fi_tc_bf16_steps(2.0, ctq, tile, 128.0, 2.0, 2.0)
    blocks = np.array([2.0, 8.0, 8.0])
    mma = blocks * 4.0 * 16.0 * 16.0 * 128.0 / FI.FI_TC_WARP_MMA_FLOPS / FI.FI_TC_LOAD_S
    assert FI.FI_TC_MMA_SHARED and 0.0 < FI.FI_TC_MMA_SHARE_EXPOSED <= 1.0
    assert np.allclose(two - one, FI.FI_TC_MMA_SHARE_EXPOSED * mma)
    assert np.allclose(FI.fi_tc_bf16_steps(1.0, ctq, tile, 128.0, 2.0, 2.0), 0.0)
    # the launch passes its busiest SM's CTAs: Llama-3.1-8B heads, B 144 q 3 T 200 run 2 CTAs per SM (every wave at
    # that k: the last partial wave's own occupancy off, test_fa2_last_partial_wave_runs_at_its_own_occupancy)
    monkeypatch.setattr(FI, "FI_TC_LAST_WAVE_SHARE", False)
    ln, info = FI.fi_tc(144.0, 3.0, 200.0, 32.0, 8.0, 128.0, 2.0, 16.0, SMS, SMEM)
    assert float(info["busiest_sm_ctas"]) == 2.0
    tiles = np.ceil(info["chunk_tokens"] / info["cta_tile_kv"])
    assert np.allclose(ln[0].serial_iters, FI.fi_tc_bf16_steps(tiles, info["cta_tile_q"], info["cta_tile_kv"], 128.0,
                                                               2.0, 2.0))
    monkeypatch.setattr(FI, "FI_TC_MMA_SHARED", False)
    assert np.allclose(FI.fi_tc_bf16_steps(2.0, ctq, tile, 128.0, 2.0, 2.0), one)


def test_fa2_bf16_tile_rates_are_the_scan_fit():
    # FI_TC_TILE_RATE_SM / FI_TC_WARP_MMA_FLOPS are the fit of the committed tile-rate scan's one-CTA rows by
    # lab/kernels/fit_fi_tc_tile_rates.py (lab/ beside tests/), to the 4 digits the module writes
    import importlib.util
    from pathlib import Path

    import pandas as pd

    path = Path(__file__).resolve().parents[1] / "lab" / "kernels" / "fit_fi_tc_tile_rates.py"
    spec = importlib.util.spec_from_file_location("fit_fi_tc_tile_rates", path)
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    import hwmodels
    data = Path(hwmodels.__file__).resolve().parent / "calibration" / "data" / "production_attention"
    scan = pd.read_csv(data / "production_attention_fi_tc_scan12_nvidia-h100-80gb-hbm3_2026-11-27.csv")
    scan = fit.configs(scan[scan["note"].fillna("").str.contains("nosplit") & (scan["dtype"] == "bf16")])
    sl = fit.slopes(scan)
    assert len(sl[sl["batch"] == 1]) == 6
    rate, warp = fit.fit_rates(sl[sl["batch"] == 1])
    assert abs(rate / FI.FI_TC_TILE_RATE_SM - 1.0) < 1e-3 and abs(warp / FI.FI_TC_WARP_MMA_FLOPS - 1.0) < 1e-3


def test_decode_chain_and_issue_compound_only_for_the_cuda_core_decode(monkeypatch):
    # roofline CHAIN_OVERLAP: the CUDA-core decode kinds combine body and chain through overlap_p (never below the
    # larger, never above their sum); every other kind's rows price exactly as with the hard max
    from hwmodels import roofline as R

    FP, df, _, hw = _campaign()
    ops = FP.build_ops(df, hw.units, float(hw.smem_per_unit_bytes))
    monkeypatch.setattr(R, "CHAIN_OVERLAP_WAVE_FILL", False)   # tested on its own below
    new = FP.predict_us(ops, hw, hw.efficiency, len(df))
    with monkeypatch.context() as m:
        m.setattr(R, "CHAIN_OVERLAP", ())
        old = FP.predict_us(ops, hw, hw.efficiency, len(df))
        m.setattr(R, "CHAIN_OVERLAP_BW_CEILING", False)
        m.setattr(R, "CHAIN_OVERLAP_STAGGERED", False)
        m.setattr(R, "CHAIN_OVERLAP", tuple(R.KIND_CODE[k] for k in ("attn_fi_decode", "attn_fi_decode_fp8kv")))
        compounded = FP.predict_us(ops, hw, hw.efficiency, len(df))
    dec = df["family"].to_numpy() == "fi_decode"
    assert (compounded[dec] >= old[dec] - 1e-9).all() and (new[dec] > old[dec] * 1.01).any()
    # HBM a ceiling (CHAIN_OVERLAP_BW_CEILING): never above the fully compounded price, lower on bf16 many-wave batches
    big = dec & (df["batch"].to_numpy() >= 256) & (df["context"].to_numpy() >= 1024) & (df["dtype"].to_numpy() == "bf16")
    assert (new[dec] <= compounded[dec] + 1e-9).all() and (new[big] < compounded[big] * 0.97).all()
    np.testing.assert_allclose(new[~dec], old[~dec], rtol=1e-12)


def test_decode_later_waves_take_the_larger_of_chain_and_issue(monkeypatch):
    # roofline CHAIN_OVERLAP_STAGGERED: a one-wave decode launch prices as before; a launch of several waves never
    # above the all-waves-compounded price, and lower on the fp8 many-wave middle calls (issue close to the chain)
    from hwmodels import roofline as R

    FP, df, _, hw = _campaign()
    ops = FP.build_ops(df, hw.units, float(hw.smem_per_unit_bytes))
    monkeypatch.setattr(R, "CHAIN_OVERLAP_WAVE_FILL", False)   # tested on its own below
    new = FP.predict_us(ops, hw, hw.efficiency, len(df))
    with monkeypatch.context() as m:
        m.setattr(R, "CHAIN_OVERLAP_STAGGERED", False)
        old = FP.predict_us(ops, hw, hw.efficiency, len(df))
    dec = df["family"].to_numpy() == "fi_decode"
    B, T = df["batch"].to_numpy(float), df["context"].to_numpy(float)
    fp8 = df["dtype"].to_numpy() == "fp8"
    # one wave: Llama-3.1-8B's heads (the kinds' calibrated residency is their kernels' own) below 6 CTAs per SM
    one = dec & (df["model"].to_numpy() == "llama8b") & (B * df["kv_heads"].to_numpy(float) <= 6 * hw.units)
    np.testing.assert_allclose(new[one], old[one], rtol=1e-12)
    assert (new[dec] <= old[dec] + 1e-9).all()
    many = dec & fp8 & (B >= 256) & (T >= 1024)
    assert many.any() and (new[many] < old[many] * 0.97).all()
    np.testing.assert_allclose(new[~dec], old[~dec], rtol=1e-12)


def test_decode_later_waves_wait_for_their_first_tile(monkeypatch):
    # roofline CHAIN_OVERLAP_WAVE_FILL: a later wave's issue is issue + one iteration, under the HBM ceiling: one-wave
    # launches and other families unchanged, never lower, higher on the fp8 many-wave short calls (issue-bound), the
    # HBM-bound Llama-3.1-8B bf16 many-wave short calls unchanged
    from hwmodels import roofline as R

    FP, df, _, hw = _campaign()
    ops = FP.build_ops(df, hw.units, float(hw.smem_per_unit_bytes))
    new = FP.predict_us(ops, hw, hw.efficiency, len(df))
    with monkeypatch.context() as m:
        m.setattr(R, "CHAIN_OVERLAP_WAVE_FILL", False)
        old = FP.predict_us(ops, hw, hw.efficiency, len(df))
    dec = df["family"].to_numpy() == "fi_decode"
    B, T = df["batch"].to_numpy(float), df["context"].to_numpy(float)
    fp8, l8 = df["dtype"].to_numpy() == "fp8", df["model"].to_numpy() == "llama8b"
    one = dec & l8 & (B * df["kv_heads"].to_numpy(float) <= 6 * hw.units)
    np.testing.assert_allclose(new[one], old[one], rtol=1e-12)
    np.testing.assert_allclose(new[~dec], old[~dec], rtol=1e-12)
    assert (new[dec] >= old[dec] - 1e-9).all()
    short = dec & fp8 & l8 & (B >= 256) & (T <= 64)
    assert short.any() and (new[short] > old[short] * 1.05).all()
    hbm = dec & ~fp8 & l8 & (B >= 256) & (T <= 256)
    assert hbm.any() and np.allclose(new[hbm], old[hbm], rtol=1e-9)


def test_decode_waves_use_the_kernels_own_residency():
    # FI_DECODE_OWN_RESIDENCY: the 9-slot bf16 kernel (Llama-3.1-70B's group of 8) counts 1,088 working CTAs as one wave
    # (9 x 132 slots), not two at the kind's calibrated 8
    FP, _, _, hw = _campaign()
    import pandas as pd

    row = dict(family="fi_decode", model="llama70b", heads=64, kv_heads=8, head_dim=128, dtype="bf16", q_rows=1,
               context=44, page_size=16)
    df = pd.DataFrame([{**row, "batch": 136}])
    launches, info = FI.fi_decode(136.0, 44.0, 64.0, 8.0, 128.0, 2.0, 16.0, SMS, SMEM)
    assert float(info["slots"]) == 9.0 and float(launches[0].resident) == 9.0
    ops = FP.build_ops(df, hw.units, float(hw.smem_per_unit_bytes))
    own = FP.predict_us(ops, hw, hw.efficiency, 1)
    ops.resident_ctas = np.zeros_like(ops.resident_ctas)
    cal = FP.predict_us(ops, hw, hw.efficiency, 1)
    assert own[0] < cal[0]


def test_flashinfer_committed_terms_are_the_fit_of_the_committed_csv():
    # the shipped CUDA-core decode and fp8 prefill terms are what the middle-regime fit gives under the revised rules
    FP, hw, eff, meta = _campaign_fit()
    e = hw.efficiency
    for kind in ("attn_fi_decode", "attn_fi_decode_fp8kv", "attn_fi_prefill_fp8kv"):
        assert e.iter_s[kind] * 1e6 == pytest.approx(eff.iter_s[kind] * 1e6, abs=1e-4)
        assert e.compute[kind] == pytest.approx(eff.compute[kind], abs=1e-4)
    assert meta["fi_prefill_fp8kv"]["rms_log_error"] < 0.07 and meta["fi_decode_fp8kv"]["rms_log_error"] < 0.08


def test_fresh_fi2_grid_is_new_and_both_predictions_cover_it():
    # the second FlashInfer check grid: 140 shapes in none of the earlier grids' rows, priced before the device run by
    # the revised model and by the model at a823ab8; the measured rows join both

    import pandas as pd

    from simulator.calibration import fit_production_attention as FP

    m = _campaign_script()
    sh = pd.DataFrame([s for p in ("fi_decode", "fi_tc", "fi_verify") for s in m.shapes(p, "fresh_fi2")])
    keys = ["family", "model", "dtype", "batch", "context", "q_rows", "page_size"]
    cast = {"batch": float, "context": float, "q_rows": float, "page_size": float}
    seen = set()
    for f in DF.glob(FP.DATA_DIR, "production_attention_*nvidia*.csv"):
        if "_grids" in f.name or "fresh_fi2" in f.name:
            continue
        d = FP.load(f)
        if set(keys) <= set(d.columns):
            seen |= set(map(tuple, d[keys].astype(cast).to_numpy().tolist()))
    mine = set(map(tuple, sh[keys].astype(cast).to_numpy().tolist()))
    assert len(mine) == len(sh) == 140 and not mine & seen
    meas = FP.load(DF.glob(FP.DATA_DIR, "production_attention_fresh_fi2_nvidia*.csv")[0])
    for name, commit in (("production_attention_fresh_fi2_predictions.csv", "e9e2977"),
                         ("production_attention_fresh_fi2_predictions_a823ab8.csv", "a823ab8")):
        pr = pd.read_csv(DF.resolve(FP.DATA_DIR / name))
        j = meas.merge(pr, on=[k for k in FP.SHAPE_KEYS if k in pr.columns])
        assert len(j) == 140 and np.isfinite(j["pred_us"]).all() and j["model_commit"].str.startswith(commit).all()


def test_flashmla_next_request_q_tile_is_exposed_after_the_first():
    # one request per part: no exposed Q tile (the first Q is loaded beside the first K/V block); every later request
    # of a part adds one round trip + its Q tile's bytes at FM_Q_RATE_SM, the tile min(q x Hq, 64) rows x 576 bf16
    one = FM.q_tile_loads(1.0, 16.0)
    assert one == pytest.approx(FM.Q_WAITS + 16 * 576 * 2 / FM.FM_Q_RATE_SM / FM.LOAD_S)
    assert FM.q_tile_loads(1.0, 128.0) - FM.Q_WAITS == pytest.approx(4.0 * (one - FM.Q_WAITS))
    B = np.array([66.0, 66.0 * 8])
    (k1, _), info = FM.flashmla(B, 1.0, 2048.0, 128.0, 512.0, 64.0, 2.0, SMS)
    r = info["requests_per_part"]
    assert list(r) == [1.0, 8.0]
    base = FM.PROLOGUE_LOADS + FM.STORE_WAITS
    assert np.asarray(k1.prologue_loads) == pytest.approx(base * r + FM.q_tile_loads(1.0, 128.0) * (r - 1.0))


def test_fi_mla_output_store_bytes_term_is_off():
    # the per-item output store as bytes / rate was rejected by the scan on the fit rows: no term
    assert np.all(FI.fi_mla_o_loads(1.0, np.array([16.0, 128.0]), np.array([True, False])) == 0.0)


def test_mla_fit2_and_blind2_grids_are_new_fitted_and_predicted():
    # the MLA fit and blind grids are in none of the earlier MLA rows, the fit rows are fitted (fit_rows) and the
    # blind rows are not, and both committed price files (this model's prior, the model at 29e0e49) cover every
    # measured blind shape
    import pandas as pd

    from simulator.calibration import fit_production_attention as FP
    from simulator.calibration.blind_grids import blind_errors

    m = _campaign_script()
    keys = ["family", "model", "batch", "context"]
    fit2 = pd.DataFrame([s for p in ("fi_mla", "flashmla") for s in m.shapes(p, "mla_fit2")])
    bl2 = pd.DataFrame([s for p in ("fi_mla", "flashmla") for s in m.shapes(p, "mla_blind2")])
    assert len(fit2) == 36 and len(bl2) == 108
    seen = set()
    for f in DF.glob(FP.DATA_DIR, "production_attention_*nvidia*.csv"):
        if "_grids" in f.name or "mla_fit2" in f.name or "mla_blind2" in f.name:
            continue
        d = FP.load(f)
        seen |= set(map(tuple, d[keys].astype({"batch": float, "context": float}).to_numpy().tolist()))
    tup = [set(map(tuple, sh[keys].astype({"batch": float, "context": float}).to_numpy().tolist())) for sh in (fit2, bl2)]
    # one blind shape was measured before (the MLA merge grid's fi_mla 16 heads B 40 T 5000): the report leaves it out
    assert not tup[0] & seen and tup[1] & seen == {("fi_mla", "mla16", 40.0, 5000.0)}
    fr = FP.load_mla_fit()
    assert len(fr) == 36 and FP.fit_rows(fr).all()
    j, name = blind_errors(FP, "production_attention_mla_blind2_nvidia*.csv",
                           "production_attention_mla_blind2_predictions.csv",
                           "production_attention_mla_blind2_predictions_29e0e49.csv")
    assert name and len(j) == 108 and np.isfinite(j["err"]).all() and np.isfinite(j["err_before"]).all()
    assert set(j["before_commit"].str[:7]) == {"29e0e49"} and j["model_commit"].nunique() == 1


def test_fi_mla_tensor_work_is_on_the_stage_chain():
    # CHAIN_TENSOR: the sm_90 MLA kernel's stage GEMMs are in its per-stage chain, so its price does not depend on the
    # launch's FLOPs (a compute-heavy long 128-head shape prices the same with its FLOPs scaled by 10); the FA2 prefill
    # kind still does
    import dataclasses

    from hwmodels.roofline import CHAIN_TENSOR, KIND_CODE
    from simulator.calibration import fit_production_attention as FP
    from simulator.ops import OpBuilder

    assert KIND_CODE["attn_fi_mla"] in CHAIN_TENSOR and KIND_CODE["attn_fi_prefill"] not in CHAIN_TENSOR
    _, _, _, hw = _campaign()
    ln, _ = FI.fi_mla(np.array([16.0]), 1.0, 65536.0, 128.0, 512.0, 64.0, 2.0, 1.0, SMS)
    prices = []
    for k in (1.0, 10.0):
        b = OpBuilder(1)
        emit(b, [dataclasses.replace(ln[0], flops=ln[0].flops * k)], SMS)
        prices.append(FP.predict_us(b.build(), hw, hw.efficiency, 1)[0])
    assert prices[0] > 100.0 and abs(prices[1] / prices[0] - 1.0) < 1e-12


def test_decode_blind_grids_are_new_and_their_prices_cover_them():
    # the CUDA-core decode blind grids: 123 and 76 fi_decode shapes in none of the rows measured before each, every
    # shape priced by every committed price file (before the device run); the second grid is in none of the first's
    # rows, and the first grid's lone-CTA rows (one KV head, >= 512 tokens, page 16) are the fit's FI_LONE_FIT_GLOB rows
    import pandas as pd

    from simulator.calibration import fit_production_attention as FP

    m = _campaign_script()
    keys = ["family", "model", "dtype", "batch", "context", "q_rows", "page_size"]
    cast = {"batch": float, "context": float, "q_rows": float, "page_size": float}
    for grid, n, prices in (("fi_dec_blind", 123, ("", "_65f5d1f")), ("fi_dec_blind2", 76, ("", "_65f5d1f", "_be6c3b8")),
                            ("fi_dec_blind3", 88, ("", "_c61edea")), ("fi_dec_blind4", 83, ("", "_5b35f90", "_cta1.5"))):
        sh = pd.DataFrame(m.shapes("fi_decode", grid))
        seen = set()
        for f in DF.glob(FP.DATA_DIR, "production_attention_*nvidia*.csv"):
            if "_grids" in f.name or f"_{grid}_" in f.name:
                continue
            d = FP.load(f)
            if set(keys) <= set(d.columns):
                seen |= set(map(tuple, d[keys].astype(cast).to_numpy().tolist()))
        mine = set(map(tuple, sh[keys].astype(cast).to_numpy().tolist()))
        assert len(mine) == len(sh) == n and not mine & seen
        for suffix in prices:
            pr = pd.read_csv(DF.resolve(FP.DATA_DIR / f"production_attention_{grid}_predictions{suffix}.csv"))
            assert len(sh.merge(pr, on=[k for k in FP.SHAPE_KEYS if k in pr.columns])) == n
            assert pr["pred_us"].gt(0).all()
    lone = FP.load_fi_lone_fit()
    assert len(lone) == 16 and (lone["kv_heads"] == 1).all() and (lone["context"] >= 512).all()
    # the third grid's fp8 rows at one KV head and >= 512 tokens are the fp8 lone-CTA fit rows; its bf16 rows are none
    assert (lone["dtype"] == "fp8").sum() == 10 and (lone["dtype"] == "bf16").sum() == 6


def test_fp8_group8_decode_registers_give_seven_resident_ctas():
    # the group-8 fp8 K/V decode kernel: 72 registers x 128 threads (launch profile) -> 7 CTAs per SM, the CUDA-graph
    # grid (115, 8) the launch profile recorded; the group-8 bf16 kernel 9 (148, 8)
    from simulator.kernels import flashinfer as FI

    for kvb, slots, gx in ((1.0, 7.0, 115.0), (2.0, 9.0, 148.0)):
        _, info = FI.fi_decode(6.0, 68.0, 64.0, 8.0, 128.0, kvb, 16.0, 132, 233472.0)
        assert float(info["slots"]) == slots and float(info["ctas"]) == gx * 8.0


def test_decode_call_cta_launch_is_priced_on_the_busiest_sm_and_only_for_the_decode_call():
    # FI_DECODE_CTA_LAUNCH_SHARE: each CTA after an SM's first adds a share of a dependent load, on the busiest SM of a
    # one-wave decode kernel (the measured dispatch) and on the decode call's merge (SMs x m CTAs); the FA2 prefill
    # call's merge takes none
    from simulator.kernels import flashinfer as FI

    s = FI.FI_DECODE_CTA_LAUNCH_SHARE
    assert 0.0 < s < 1.0
    ln, info = FI.fi_decode(28.0, 20.0, 32.0, 8.0, 128.0, 2.0, 16.0, 132, 233472.0)
    kb = float(info["busiest_sm_ctas"])
    assert kb == 8.0 and abs(float(ln[0].prologue_loads) - (FI.FI_PROLOGUE_LOADS + s * (kb - 1.0))) < 1e-12
    merge = ln[-1]
    m = float(merge.ctas) / 132.0
    assert m == 7.0 and abs(float(merge.prologue_loads) - (FI.FI_MERGE_PROLOGUE_LOADS + s * (m - 1.0))) < 1e-12
    tc, _ = FI.fi_tc(28.0, 1.0, 20.0, 32.0, 8.0, 128.0, 2.0, 16.0, 132, 233472.0)
    assert float(tc[-1].prologue_loads) == FI.FI_MERGE_PROLOGUE_LOADS


def test_dispatch_probe_cap_and_the_probed_nine_slot_placement():
    # probe_fi_dispatch.cap_smem: the largest 128-byte step that gives exactly k resident CTAs (an allocator with a
    # 1 KiB reserve per CTA and 128-byte granularity: the unrounded 228 KiB / 9 - 1 KiB gave 8); the committed probe at
    # 9 per SM is the placement the 9-slot kernel takes
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab" / "kernels"))
    import probe_fi_dispatch as P

    from simulator.kernels import flashinfer as FI

    def occ(smem):
        return 233472 // (((smem + 127) // 128) * 128 + 1024)

    assert occ(233472 // 9 - 1024) == 8
    for k in (9, 8, 7, 6):
        assert occ(P.cap_smem(occ, k)) == k
    t = FI._placement_table(148, 8, 9)
    assert t is not None and len(t) == 149 and t[-1] == 9
    assert float(FI.fi_decode_crowding(64.0, 148.0, 8.0, 9.0, 132)) == float(t[64])


def test_fi_mla_tail_round_streams_on_its_own_sms(monkeypatch):
    # TAIL_ROUND_KINDS: 280 whole requests on 132 SMs (16 heads, T 3000: unsplit) leave 16 items for a third round,
    # priced after the two full rounds (slower than max(body, chain)); 264 requests (two full rounds) price the same
    # with or without the rule; the blind grid 4's predictions cover all its 120 new shapes
    import hwmodels.roofline as R
    from simulator.calibration import fit_production_attention as FP
    from simulator.ops import OpBuilder

    _, _, _, hw = _campaign()

    def price(B):
        ln, pl = FI.fi_mla(np.array([float(B)]), 1.0, 3000.0, 16.0, 512.0, 64.0, 2.0, 1.0, SMS)
        b = OpBuilder(1)
        emit(b, ln, SMS)
        return FP.predict_us(b.build(), hw, hw.efficiency, 1)[0], pl

    monkeypatch.setattr(R, "TAIL_ROUND_KINDS", ("attn_fi_mla",))   # the rule as judged on blind grid 4 (shipped off)
    (tail, pl), (full, _) = price(280), price(264)
    assert not pl["split"][0] and pl["waves"][0] == 3.0
    monkeypatch.setattr(R, "TAIL_ROUND_KINDS", ())
    (flat, _), (full0, _) = price(280), price(264)
    assert tail > 1.1 * flat and full == pytest.approx(full0, rel=1e-9)
    import pandas as pd

    m = _campaign_script()
    sh = pd.DataFrame([s for p in ("fi_mla", "flashmla") for s in m.shapes(p, "mla_blind4")])
    keys = ["family", "heads", "batch", "context"]
    for f in ("", "_8b74743", "_tail_unsplit", "_q_l2"):
        p = pd.read_csv(DF.resolve(FP.DATA_DIR / f"production_attention_mla_blind4_predictions{f}.csv"))
        assert len(sh.merge(p[keys + ["pred_us"]], on=keys)) == len(sh) == 120 and p["pred_us"].gt(0).all()


def test_mla_blind6_grid_is_new_and_every_price_file_covers_it():
    # the sixth MLA blind grid: no (batch, context) of it in an earlier committed MLA CSV; the three price files (the
    # small-batch model, main's model at cbe4f0b, oob15) cover all its shapes
    import pandas as pd

    from simulator.calibration import fit_production_attention as FP

    m = _campaign_script()
    sh = pd.DataFrame([s for p in ("fi_mla", "flashmla") for s in m.shapes(p, "mla_blind6")])
    keys = ["family", "heads", "batch", "context"]
    for f in ("", "_cbe4f0b", "_oob15"):
        p = pd.read_csv(DF.resolve(FP.DATA_DIR / f"production_attention_mla_blind6_predictions{f}.csv"))
        assert len(sh.merge(p[keys + ["pred_us"]], on=keys)) == len(sh) == 96 and p["pred_us"].gt(0).all()
    earlier = [f for f in DF.glob(FP.DATA_DIR, "production_attention_*nvidia*.csv")
               if "blind6" not in f.name and "_grids" not in f.name]
    seen = set()
    for f in earlier:
        d = pd.read_csv(f)
        if {"batch", "context"} <= set(d.columns):
            if "family" in d.columns:   # MLA rows only (the docstring's claim; other kernels' grids share (B, T) pairs)
                d = d[d["family"].isin(["fi_mla", "flashmla"])]
            seen |= set(zip(d["batch"], d["context"]))
    assert not seen & set(zip(sh["batch"], sh["context"]))


def test_mla_blind5_grid_is_new_and_every_price_file_covers_it():
    # the fifth MLA blind grid: no (batch, context) of it in an earlier committed MLA CSV; the four price files
    # (the fill model, main's model at 6648a5d, fill21, fill30) cover all its shapes; FlashMLA is priced alike by all
    import pandas as pd

    from simulator.calibration import fit_production_attention as FP

    m = _campaign_script()
    sh = pd.DataFrame([s for p in ("fi_mla", "flashmla") for s in m.shapes(p, "mla_blind5")])
    keys = ["family", "heads", "batch", "context"]
    prices = {}
    for f in ("", "_6648a5d", "_fill21", "_fill30"):
        p = pd.read_csv(DF.resolve(FP.DATA_DIR / f"production_attention_mla_blind5_predictions{f}.csv"))
        assert len(sh.merge(p[keys + ["pred_us"]], on=keys)) == len(sh) == 112 and p["pred_us"].gt(0).all()
        prices[f] = p.set_index(keys)["pred_us"]
    fm = [k for k in prices[""].index if k[0] == "flashmla"]
    assert all(np.allclose(prices[f][fm], prices[""][fm]) for f in prices)
    earlier = [f for f in DF.glob(FP.DATA_DIR, "production_attention_mla_*nvidia*.csv")
               if "blind5" not in f.name and "_grids" not in f.name]
    seen = set()
    for f in earlier:
        d = pd.read_csv(f)
        seen |= set(zip(d["batch"], d["context"]))
    assert not seen & set(zip(sh["batch"], sh["context"]))


def test_fi_graph_placement_reads_probe_and_is_on():
    """FI_GRAPH_PLACEMENT (simulator/kernels/flashinfer.py, shipped after the seventh decode blind grid) reads the CTA
    probe's launches of the (594, 2) grid at 9 per SM: 4 working CTAs on the busiest SM at 150 columns, where the even
    spread (the rule off) gives 3."""
    import numpy as np

    from simulator.kernels import flashinfer as FI

    assert FI.FI_GRAPH_PLACEMENT is True
    t = FI._graph_placement_table(594, 2, 9)
    assert t is not None and len(t) == 595 and t[150] == 4.0 and t[70] == 2.0
    args = (np.array([150.0]), np.array([594.0]), np.array([2.0]), np.array([9.0]), 132)
    assert FI.fi_decode_crowding(*args)[0] == 4.0
    try:
        FI.FI_GRAPH_PLACEMENT = False
        assert FI.fi_decode_crowding(*args)[0] == 3.0
    finally:
        FI.FI_GRAPH_PLACEMENT = True


def test_fi_decode_loaded_latency_and_merge_reloads():
    # CHAIN_LOADED: a crowded S = 2 call (Llama-3.1-8B bf16, B 60 at 204 tokens) costs more with the loaded iteration
    # than without, a lone small call (B 1) next to nothing more; FI_MERGE_ITEM_RELOADS: the merge path's items after a
    # CTA's first pay their loads again, the copy path (S = 1) does not
    import hwmodels.roofline as R
    from hwmodels.roofline import price
    from hwmodels.spec import load_hardware
    from simulator.ops import MaskedBuilder, OpBuilder

    hw = load_hardware("H100-SXM")
    B = np.array([60.0, 1.0])

    def decode_us():
        launches, _ = FI.fi_decode(B, 204.0, 32.0, 8.0, 128.0, 2.0, 16.0, SMS, SMEM)
        b = OpBuilder(2)
        emit(MaskedBuilder(b, np.array([True, True])), launches[:1], SMS)
        return price(b.build(), hw, "graph") * 1e6

    on = decode_us()
    saved = R.CHAIN_LOADED
    try:
        R.CHAIN_LOADED = ()
        off = decode_us()
    finally:
        R.CHAIN_LOADED = saved
    assert on[0] > off[0] * 1.02 and on[1] == pytest.approx(off[1], rel=0.01)
    m2 = FI._merge(60.0, 1.0, 32.0, 128.0, 2.0, SMS, SMEM, True, reloads=True)
    m2_off = FI._merge(60.0, 1.0, 32.0, 128.0, 2.0, SMS, SMEM, True, reloads=False)
    m1 = FI._merge(60.0, 1.0, 32.0, 128.0, 1.0, SMS, SMEM, True, reloads=True)
    m1_off = FI._merge(60.0, 1.0, 32.0, 128.0, 1.0, SMS, SMEM, True, reloads=False)
    assert np.all(m2.prologue_loads > m2_off.prologue_loads) and np.all(m1.prologue_loads == m1_off.prologue_loads)


def test_fi_tc_blind13_grid_is_new_and_both_price_files_cover_it():
    # the thirteenth tensor-core blind grid: no shape of it in another committed CSV; main's prices (08cf44f) and the
    # shared-MMA model's, both committed before the measurement, cover all 48 shapes
    import pandas as pd

    from simulator.calibration import fit_production_attention as FP

    m = _campaign_script()
    sh = pd.DataFrame([s for p in ("fi_verify", "fi_tc") for s in m.shapes(p, "fi_tc_blind13")])
    keys = ["family", "heads", "kv_heads", "dtype", "batch", "q_rows", "context", "page_size"]
    for f in ("", "_08cf44f"):
        p = pd.read_csv(DF.resolve(FP.DATA_DIR / f"production_attention_fi_tc_blind13_predictions{f}.csv"))
        assert len(sh.merge(p[keys + ["pred_us"]], on=keys)) == len(sh) == 48 and p["pred_us"].gt(0).all()
    for f in DF.glob(FP.DATA_DIR, "production_attention_*nvidia*.csv"):
        if "blind13" in f.name or "_grids" in f.name:
            continue
        d = pd.read_csv(f)
        if set(keys) <= set(d.columns):
            assert not len(sh.merge(d[keys].drop_duplicates(), on=keys)), f.name


def test_fi_tc_blind12_grid_is_new_and_both_price_files_cover_it():
    # the twelfth tensor-core blind grid: no shape of it in another committed CSV; main's prices (06e70f8, committed
    # before the measurement) and the scanned-rate model's cover all 50 shapes
    import pandas as pd

    from simulator.calibration import fit_production_attention as FP

    m = _campaign_script()
    sh = pd.DataFrame([s for p in ("fi_verify", "fi_tc") for s in m.shapes(p, "fi_tc_blind12")])
    keys = ["family", "heads", "kv_heads", "dtype", "batch", "q_rows", "context", "page_size"]
    for f in ("", "_06e70f8"):
        p = pd.read_csv(DF.resolve(FP.DATA_DIR / f"production_attention_fi_tc_blind12_predictions{f}.csv"))
        assert len(sh.merge(p[keys + ["pred_us"]], on=keys)) == len(sh) == 50 and p["pred_us"].gt(0).all()
    for f in DF.glob(FP.DATA_DIR, "production_attention_*nvidia*.csv"):
        if "blind12" in f.name or "_grids" in f.name:
            continue
        d = pd.read_csv(f)
        if set(keys) <= set(d.columns):
            assert not len(sh.merge(d[keys].drop_duplicates(), on=keys)), f.name


def test_sgl_group7_binary_scales_the_lone_chain_only():
    # SGL_ITER_BY_G: the binary compiled for GQA group 7 walks its steady-state tiles at its measured share of group 4's
    # (bf16 and fp8 apart); groups 4 and 8 (the fit rows' binaries) keep the fitted iteration, the prologue is unchanged
    B, T = np.array([2.0, 2.0, 2.0, 2.0]), 65536.0
    hq, hkv, kvb = np.array([28.0, 32.0, 64.0, 28.0]), np.array([4.0, 8.0, 8.0, 4.0]), np.array([2.0, 2.0, 2.0, 1.0])
    launches, info = TE.triton_sgl(B, T, hq, hkv, 128.0, kvb, SMS, SMEM)
    serial = sum(np.where(ln.where, ln.serial_iters, 0.0) for ln in launches if ln.name == "attention")
    steps = np.maximum(info["iters"] - 1.0, 0.0)
    a16, a8 = TE.SGL_ITER_BY_G[7.0]
    assert serial == pytest.approx(steps * np.array([a16, 1.0, 1.0, a8]))
    assert a16 < 1.0 < a8


def test_sgl_group_binaries_measured_for_groups_2_to_7():
    # SGL_ITER_BY_G: groups 2-3 and 5-7 have their measured lone-chain ratios (bf16, fp8), groups 4 / 8 none
    assert set(TE.SGL_ITER_BY_G) == {2.0, 3.0, 5.0, 6.0, 7.0}
    assert all(a16 < 1.0 < a8 for a16, a8 in TE.SGL_ITER_BY_G.values())
    B, T = np.array([2.0, 2.0]), 65536.0
    launches, info = TE.triton_sgl(B, T, np.array([24.0, 40.0]), 8.0, 128.0, np.array([1.0, 2.0]), SMS, SMEM)
    serial = sum(np.where(ln.where, ln.serial_iters, 0.0) for ln in launches if ln.name == "attention")
    steps = np.maximum(info["iters"] - 1.0, 0.0)
    assert serial == pytest.approx(steps * np.array([TE.SGL_ITER_BY_G[3.0][1], TE.SGL_ITER_BY_G[5.0][0]]))


def test_sgl_coresident_issue_hides_under_the_lone_chain():
    # hwmodels.roofline CHAIN_ISSUE_HIDDEN_P: a second program per SM (batch 4 x 65536, 256 programs) costs less over a
    # lone one (batch 2) than main's form adds (every program's issue on the chain), time still rises with the traffic,
    # and the fp8 kind keeps main's form
    import pandas as pd

    from hwmodels import roofline as RL
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP

    hw = load_hardware("H100-SXM")
    rows = pd.DataFrame([dict(family="sgl_triton", model="llama8b", heads=32, kv_heads=8, head_dim=128, dtype=kv,
                              batch=b, q_rows=1, context=65536, page_size=1) for kv in ("bf16", "fp8")
                         for b in (2, 4, 8)])
    ops = FP.build_ops(rows, hw.units, float(hw.smem_per_unit_bytes))
    new = FP.predict_us(ops, hw, hw.efficiency, len(rows))
    saved = dict(RL.CHAIN_ISSUE_HIDDEN_P)
    try:
        RL.CHAIN_ISSUE_HIDDEN_P.clear()
        old = FP.predict_us(ops, hw, hw.efficiency, len(rows))
    finally:
        RL.CHAIN_ISSUE_HIDDEN_P.update(saved)
    assert new[1] - new[0] < old[1] - old[0] and new[0] < new[1] < new[2]
    assert new[3:] == pytest.approx(old[3:])
    assert RL.KIND_CODE["attn_triton_sgl_fp8kv"] not in RL.CHAIN_ISSUE_HIDDEN_P


def test_sgl_bf16_stream_rate_and_constants_are_not_fitted():
    # SGL_MEMORY_FROM / SGL_FIXED_ZERO: the bf16 kind streams at attn_fa2's measured rate and the stage-1 / stage-2
    # constants are 0 in the shipped file; the fit takes them as given (its fitted terms: test_flashinfer_fixed_terms_
    # are_not_fitted iterates FIXED_ZERO, which holds SGL_FIXED_ZERO)
    from hwmodels.spec import load_hardware
    from simulator.calibration import fit_production_attention as FP

    eff = load_hardware("H100-SXM").efficiency
    assert FP.MEMORY_FROM["attn_triton_sgl"] == "attn_fa2" and "attn_triton_sgl_fp8kv" not in FP.MEMORY_FROM
    assert eff.memory["attn_triton_sgl"] == eff.memory["attn_fa2"]
    assert set(FP.SGL_FIXED_ZERO) <= set(FP.FIXED_ZERO)
    assert all(eff.fixed_s[k] == 0.0 for k in FP.SGL_FIXED_ZERO)
    assert ("memory.attn_triton_sgl", 0.85, 0.5, 1.0) not in FP._params("attn_triton_sgl", 0.35, True)


def test_fa2_last_partial_wave_runs_at_its_own_occupancy(monkeypatch):
    # FI_TC_LAST_WAVE_SHARE: Llama-3.1-8B heads, B 44 q 4 T 1600 (no KV split: 352 working CTAs = 264 at 2 per SM + 88)
    # run 2 waves, the last one a CTA per SM: the bf16 steps are the waves' mean of k = 2 and k = 1; fp8 the column
    # share's mean (2 / 2 and 1 / 2); a whole-wave launch (B 66: 528 CTAs) and a one-wave one (B 24) keep k
    assert FI.FI_TC_LAST_WAVE_SHARE
    ln, info = FI.fi_tc(44.0, 4.0, 1600.0, 32.0, 8.0, 128.0, 2.0, 16.0, SMS, SMEM)
    assert float(info["waves"]) == 2.0 and float(info["last_wave_sm_ctas"]) == 1.0
    assert float(info["busiest_sm_ctas"]) == 2.0
    tiles = np.ceil(info["chunk_tokens"] / info["cta_tile_kv"])
    args = (tiles, info["cta_tile_q"], info["cta_tile_kv"], 128.0, 2.0)
    want = (FI.fi_tc_bf16_steps(*args, 2.0) + FI.fi_tc_bf16_steps(*args, 1.0)) / 2.0
    assert np.allclose(ln[0].serial_iters, want)
    ln8, i8 = FI.fi_tc(44.0, 4.0, 52.0, 32.0, 8.0, 128.0, 1.0, 16.0, SMS, SMEM)
    cols = np.ceil(i8["chunk_tokens"] / i8["cta_tile_kv"]) * FI.fa2_fp8_frags(i8["cta_tile_q"], i8["cta_tile_kv"])
    assert np.allclose(ln8[0].serial_iters, cols * (1.0 + 0.5) / 2.0)
    for b in (66.0, 24.0):
        lw, iw = FI.fi_tc(b, 4.0, 1600.0, 32.0, 8.0, 128.0, 2.0, 16.0, SMS, SMEM)
        assert float(iw["last_wave_sm_ctas"]) == float(iw["busiest_sm_ctas"])
        tw = np.ceil(iw["chunk_tokens"] / iw["cta_tile_kv"])
        assert np.allclose(lw[0].serial_iters, FI.fi_tc_bf16_steps(tw, iw["cta_tile_q"], iw["cta_tile_kv"], 128.0, 2.0,
                                                                   iw["busiest_sm_ctas"]))
    monkeypatch.setattr(FI, "FI_TC_LAST_WAVE_SHARE", False)
    off, _ = FI.fi_tc(44.0, 4.0, 1600.0, 32.0, 8.0, 128.0, 2.0, 16.0, SMS, SMEM)
    assert np.allclose(off[0].serial_iters, FI.fi_tc_bf16_steps(*args, 2.0))
    assert float(off[0].serial_iters) > float(ln[0].serial_iters)


def test_fa2_merge_reloads_its_merge_path_items(monkeypatch):
    # FI_TC_MERGE_AS_DECODE: the FA2 prefill call's merge pays each merge-path item's dependent loads again after a
    # CTA's first (Qwen2.5-7B B 30 q 3 T 800: KV split in 2, 2520 items on 1584 CTAs); S = 1 items (the copy path)
    # (B 40 at 200 tokens: no split) keep the bare walk; no CTA launch share
    assert FI.FI_TC_MERGE_AS_DECODE
    on, info = FI.fi_tc(30.0, 3.0, 800.0, 28.0, 4.0, 128.0, 2.0, 16.0, SMS, SMEM)
    assert float(info["splits"]) == 2.0
    one, i1 = FI.fi_tc(40.0, 3.0, 200.0, 28.0, 4.0, 128.0, 2.0, 16.0, SMS, SMEM)
    assert float(i1["splits"]) == 1.0
    monkeypatch.setattr(FI, "FI_TC_MERGE_AS_DECODE", False)
    off, _ = FI.fi_tc(30.0, 3.0, 800.0, 28.0, 4.0, 128.0, 2.0, 16.0, SMS, SMEM)
    one_off, _ = FI.fi_tc(40.0, 3.0, 200.0, 28.0, 4.0, 128.0, 2.0, 16.0, SMS, SMEM)
    assert np.allclose(on[-1].prologue_loads - off[-1].prologue_loads, FI.FI_MERGE_PROLOGUE_LOADS * 1.0)
    assert np.allclose(one[-1].prologue_loads, one_off[-1].prologue_loads)


def test_fi_tc_blind14_grid_is_new_and_both_price_files_cover_it():
    # the fourteenth tensor-core blind grid: no shape of it in another committed CSV; main's prices (60b5b38's model)
    # and the candidate's, both committed before the measurement, cover all 39 shapes; the measured file holds all 39
    import pandas as pd

    from simulator.calibration import fit_production_attention as FP

    m = _campaign_script()
    sh = pd.DataFrame([s for p in ("fi_verify", "fi_tc") for s in m.shapes(p, "fi_tc_blind14")])
    keys = ["family", "heads", "kv_heads", "dtype", "batch", "q_rows", "context", "page_size"]
    for f in ("", "_60b5b38"):
        p = pd.read_csv(DF.resolve(FP.DATA_DIR / f"production_attention_fi_tc_blind14_predictions{f}.csv"))
        assert len(sh.merge(p[keys + ["pred_us"]], on=keys)) == len(sh) == 39 and p["pred_us"].gt(0).all()
        assert {"group", "model_commit", "fitted_on"} <= set(p.columns)
    meas = [f for f in DF.glob(FP.DATA_DIR, "production_attention_fi_tc_blind14_nvidia*.csv") if "_grids" not in f.name]
    assert len(meas) == 1
    d = FP.load(meas[0])
    assert len(d) == 39 and d.attrs["failed"] == 0 and len(sh.merge(d[keys], on=keys)) == 39
    for f in DF.glob(FP.DATA_DIR, "production_attention_*nvidia*.csv"):
        if "blind14" in f.name or "_grids" in f.name:
            continue
        d = pd.read_csv(f)
        if set(keys) <= set(d.columns):
            assert not len(sh.merge(d[keys].drop_duplicates(), on=keys)), f.name


def test_fi_decode_merge_path_sm_issue():
    # FI_MERGE_PATH_SM_DECODE: a merge whose items take the merge path (S >= 2) lasts at least the SM's issue of every
    # item it hosts (FI_MERGE_ITEM_SM_US per item); the copy path (S = 1) keeps its launch share; a lone call's few items
    # (8 rows on 132 SMs) add their issue share only, a few hundredths of a load
    kw = dict(cta_launch=FI.FI_DECODE_CTA_LAUNCH_SHARE, reloads=True)
    rows = 30.0 * 32.0   # Llama-3.1-8B bf16, B 30: 960 (request, head) items, 7.3 per SM
    m2 = FI._merge(30.0, 1.0, 32.0, 128.0, 2.0, SMS, SMEM, True, path_sm=True, **kw)
    m2_off = FI._merge(30.0, 1.0, 32.0, 128.0, 2.0, SMS, SMEM, True, path_sm=False, **kw)
    issue = FI.FI_MERGE_ITEM_SM_US * 1e-6 * rows / SMS / FI.FI_TC_LOAD_S
    assert float(np.ravel(m2.prologue_loads)[0]) == pytest.approx(FI.FI_MERGE_PROLOGUE_LOADS + issue)
    assert np.all(m2.prologue_loads > m2_off.prologue_loads)
    m1 = FI._merge(30.0, 1.0, 32.0, 128.0, 1.0, SMS, SMEM, True, path_sm=True, **kw)
    m1_off = FI._merge(30.0, 1.0, 32.0, 128.0, 1.0, SMS, SMEM, True, path_sm=False, **kw)
    assert np.all(m1.prologue_loads == m1_off.prologue_loads)
    lone = FI._merge(1.0, 1.0, 8.0, 128.0, 5.0, SMS, SMEM, True, path_sm=True, **kw)
    lone_off = FI._merge(1.0, 1.0, 8.0, 128.0, 5.0, SMS, SMEM, True, path_sm=False, **kw)
    few = FI.FI_MERGE_ITEM_SM_US * 1e-6 * 8.0 / SMS / FI.FI_TC_LOAD_S
    assert float(np.ravel(lone.prologue_loads)[0]) == pytest.approx(float(np.ravel(lone_off.prologue_loads)[0]) + few)
    assert few < 0.1
    # the decode call hands its flag to the merge
    assert FI.FI_MERGE_PATH_SM_DECODE is True
    launches, info = FI.fi_decode(30.0, 156.0, 32.0, 8.0, 128.0, 2.0, 16.0, SMS, SMEM)
    assert float(np.ravel(info["splits"])[0]) == 2.0
    assert float(np.ravel(launches[-1].prologue_loads)[0]) == pytest.approx(FI.FI_MERGE_PROLOGUE_LOADS + issue)
