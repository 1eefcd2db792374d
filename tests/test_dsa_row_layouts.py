"""DSA's row layouts for FlashMLA's sparse kernels (simulator/strategies/dsa.py decode_rows / sparse_prefill) and the
engines' defaults for them (simulator/kernels/data/engine_attention_defaults.yaml, RuntimeProfile.apply_attention)."""
from dataclasses import replace

import numpy as np
import pytest

from hwmodels.roofline import price
from simulator.combo import combo_refusal, make_combo
from simulator.engine.runtime import load_profile
from simulator.pricing import decode_ops, prefill_ops
from simulator.strategies.base import parse_axis
from simulator.strategies.dsa import kernel_rows


def _combo(tp=8, kv="fp8", mtp=0, **dsa):
    c = make_combo("H200", "DeepSeek-V3.2-Exp", kv_dtype=kv, tp=tp, launch="graph", attention="dense")
    att = {"dsa": dsa} if dsa else "dsa"
    spec = "none" if not mtp else {"mtp": {"k": mtp}}
    return replace(c, attention=parse_axis("attention", [att])[0], topk=parse_axis("topk", ["radix"])[0],
                   speculation=parse_axis("speculation", [spec])[0])


def _attention_us(c, batch, context=32768.0):
    ops, _ = decode_ops(c, np.array([float(batch)]), np.array([context]))
    names = np.asarray(ops.names, dtype=object)[ops.name_id]
    sec = price(ops, c.hardware, "graph")
    m = np.isin(names, ["attention", "attention_combine"]) & (ops.count > 1)
    return float((sec[m] / ops.count[m]).sum() * 1e6)


def _prefill_attention_ms(c, prompt):
    ops = prefill_ops(c, np.array([float(prompt)]))
    names = np.asarray(ops.names, dtype=object)[ops.name_id]
    sec = price(ops, c.hardware, "eager")
    m = (names == "attention") & (ops.count > 1)
    return float((sec[m] / ops.count[m]).sum() * 1e3)


def test_kernel_rows_per_layout():
    assert [tuple(np.ravel(x)) for x in kernel_rows(8, 3, "per_request")] == [(8.0,), (3.0,)]
    assert [tuple(np.ravel(x)) for x in kernel_rows(8, 3, "flattened")] == [(24.0,), (1.0,)]
    assert [tuple(np.ravel(x)) for x in kernel_rows(8, 3, "one_request")] == [(1.0,), (24.0,)]


def test_one_request_pays_a_second_wave_just_past_the_sms_where_flattened_rows_do_not():
    flat, one = _combo(decode_rows="flattened"), _combo(decode_rows="one_request")
    # 140 rows: one request of 140 rows is 140 CTAs of a whole row each on 132 SMs (two waves of 32 tiles); flattened,
    # the scheduler deals 140 x (32 + 5) tiles over 132 parts
    assert _attention_us(one, 140) > 1.4 * _attention_us(flat, 140)
    # at a batch the parts divide, the per-request and flattened layouts deal the same payload
    per = _combo(mtp=1)
    assert np.isclose(_attention_us(per, 64), _attention_us(_combo(mtp=1, decode_rows="flattened"), 64), rtol=0.02)


def test_the_decode_kernel_prefill_is_slower_than_the_prefill_kernel_and_reads_the_prompt_from_the_l2():
    dk, fm = _combo(sparse_prefill="decode_kernel"), _combo()
    a, b = _prefill_attention_ms(dk, 32768), _prefill_attention_ms(fm, 32768)
    assert 1.1 * b < a < 2.0 * b
    from simulator.kernels import flashmla_sparse as K
    old = K.SHARED_ROWS_L2
    K.SHARED_ROWS_L2 = False
    try:
        cold = _prefill_attention_ms(dk, 32768)
    finally:
        K.SHARED_ROWS_L2 = old
    assert cold > 1.2 * a


def test_layouts_are_refused_where_nothing_prices_them():
    bad = _combo(decode_rows="flattened", sparse_kernel="generic")
    assert "sparse_kernel: flashmla" in combo_refusal(bad)
    assert combo_refusal(_combo(decode_rows="one_request", sparse_prefill="decode_kernel")) is None


@pytest.mark.parametrize("engine,tp,rows,prefill", [("sglang", 8, "flattened", "decode_kernel"),
                                                      ("sglang", 2, "flattened", "decode_kernel"),
                                                      ("vllm-v1", 8, "one_request", "decode_kernel"),
                                                      ("vllm-v1", 2, "per_request", "flashmla")])
def test_engine_profiles_lay_dsa_out_as_their_sources_do(engine, tp, rows, prefill):
    prof = load_profile(engine)
    c, _ = prof.apply_attention(_combo(tp=tp))
    assert (c.attention.decode_rows, c.attention.sparse_prefill) == (rows, prefill)
    assert prof.dsa_layout(_combo(tp=tp)) == {"sparse_kernel": "flashmla", "decode_rows": rows,
                                              "sparse_prefill": prefill, "short_prompt_dense": engine == "sglang",
                                              "indexer_rows": "flattened" if engine == "sglang" else "auto"}
    bf16 = prof.dsa_layout(_combo(tp=tp, kv="bf16"))
    # SGLang decodes over a bf16 cache with FA3's qv kernel and prefills with the sparse prefill kernel
    assert bf16["sparse_kernel"] == ("fa3" if engine == "sglang" else "flashmla")
    assert bf16["sparse_prefill"] == "flashmla"


def test_an_engine_never_overrides_a_layout_the_scenario_set():
    c, _ = load_profile("sglang").apply_attention(_combo(decode_rows="per_request"))
    assert (c.attention.decode_rows, c.attention.sparse_prefill) == ("per_request", "decode_kernel")
    c, _ = load_profile("vllm-v1").apply_attention(_combo(tp=8, kv="bf16"))
    assert c.attention.decode_rows == "per_request"   # the few-heads layout is the fp8 path's only


def test_the_fast_scheduler_matches_the_greedy_replica():
    from simulator.kernels import flashmla_sparse as K

    def replica(batch, k, n_parts):
        T = int(np.ceil(k / 64))
        pay = int(np.ceil(batch * (T + 5) / n_parts)) + 5
        best, req, blk, touched = (0, 0), 0, 0, np.zeros(batch, int)
        for _ in range(n_parts):
            remain, tiles, segs = pay, 0, 0
            while req < batch:
                left = T - blk
                if remain >= left + 5:
                    tiles, segs, remain = tiles + left, segs + 1, remain - left - 5
                    touched[req] += 1
                    req, blk = req + 1, 0
                else:
                    if remain - 5 > 0:
                        tiles, segs, blk = tiles + remain - 5, segs + 1, blk + remain - 5
                        touched[req] += 1
                    break
            if tiles + 5 * segs > best[0] + 5 * best[1]:
                best = (tiles, segs)
            if req >= batch:
                break
        split = touched[touched > 1]
        return best[0], best[1], int(touched.max()), len(split), int(split.sum())

    for b in (1, 2, 3, 5, 17, 64, 131, 133, 300, 1000):
        for k in (512, 1000, 2048):
            for p in (1, 7, 33, 66, 132):
                assert K.schedule(b, k, p) == replica(b, k, p), (b, k, p)


def test_the_vectorized_scheduler_matches_the_scalar_one():
    from simulator.kernels import flashmla_sparse as K

    bs = np.array([1, 2, 5, 31, 64, 131, 132, 133, 140, 700, 4096, 9999])
    parts = np.array([132, 66, 1, 44, 7, 132, 33, 1, 132, 2, 132, 16])
    got = K.schedule_arrays(bs, 2048, parts)
    for i, (b, p) in enumerate(zip(bs, parts)):
        assert tuple(int(a[i]) for a in got) == K.schedule(int(b), 2048, int(p)), (b, p)


def test_sglang_prefills_short_prompts_densely_and_a_bf16_cache_with_the_prefill_kernel():
    prof = load_profile("sglang")
    c, _ = prof.apply_attention(_combo(kv="bf16"))
    assert c.attention.sparse_prefill == "flashmla" and c.attention.short_prompt_dense
    dense, sparse = _combo(short_prompt_dense=True), _combo()
    # at 1,024 tokens (<= k) the dense causal pairs are a quarter of every row's k entries
    assert _prefill_attention_ms(dense, 1024) < 0.5 * _prefill_attention_ms(sparse, 1024)
    assert np.isclose(_prefill_attention_ms(dense, 8192), _prefill_attention_ms(sparse, 8192))


def test_tensorrt_llm_runs_decode_rows_through_the_sparse_prefill_kernel_on_hopper():
    c, _ = load_profile("trtllm").apply_attention(_combo(kv="bf16"))
    assert c.attention.sparse_kernel == "prefill_kernel"
    assert combo_refusal(c) is None
    # a lone row is one CTA's compute; 133 rows of 64 heads take a second wave; the first 132 share the HBM
    one, full, more = (_attention_us(_combo(kv="bf16", sparse_kernel="prefill_kernel"), b, 16384) for b in (1, 132, 133))
    assert 40 < one < 80 and full > one and more > 1.3 * full
    # the flashmla decode kernel's split rows are far faster at one row
    assert _attention_us(_combo(), 1, 16384) < 0.5 * one


def test_the_rows_kind_is_refused_where_its_terms_are_missing():
    from dataclasses import replace as rp

    c = _combo(kv="bf16", sparse_kernel="prefill_kernel")
    e = c.hardware.efficiency
    slots = {k: v for k, v in e.cta_slots.items() if k != "attn_flashmla_sparse_fwd"}
    bare = rp(c, hardware=c.hardware.with_efficiency(rp(e, cta_slots=slots)))
    assert "attn_flashmla_sparse_fwd" in combo_refusal(bare)


def test_mtp_rows_re_read_the_previous_rows_keys_by_the_overlap():
    from simulator.strategies.dsa import ROW_OVERLAP_DEFAULT, row_unique_tokens

    assert row_unique_tokens(8, 1, 32768.0, 2048, 0.43) is None      # one row a request: nothing re-read
    assert float(row_unique_tokens(8, 3, 32768.0, 2048, 0.5)) == 8 * 2048 * 2.0
    assert 0.0 < ROW_OVERLAP_DEFAULT < 0.5
    a, b, c = (_attention_us(_combo(mtp=1, row_overlap=o), 32) for o in (0.0, ROW_OVERLAP_DEFAULT, 0.8))
    assert a > b > c and c > 0.85 * a
    assert np.isclose(_attention_us(_combo(row_overlap=0.0), 32), _attention_us(_combo(row_overlap=0.8), 32))


def test_the_indexer_flattens_mtp_rows_where_deepgemm_sm90_takes_no_such_next_n():
    from simulator.strategies.dsa import indexer_rows_flattened

    assert list(indexer_rows_flattened("auto", "hopper", np.array([1, 2, 3, 4]))) == [False, False, True, True]
    assert not indexer_rows_flattened("auto", "blackwell", np.array([4])).any()
    assert list(indexer_rows_flattened("flattened", "blackwell", np.array([1, 2]))) == [False, True]

    def idx_us(mode, mtp):
        c = _combo(mtp=mtp, indexer_rows=mode)
        ops, _ = decode_ops(c, np.array([32.0]), np.array([32768.0]))
        names = np.asarray(ops.names, dtype=object)[ops.name_id]
        sec = price(ops, c.hardware, "graph")
        m = (names == "indexer_logits") & (ops.count > 1)
        return float((sec[m] / ops.count[m]).sum() * 1e6)
    # the flattened rows are next_n 1 sequences: a 4-row step walks ~4x the items of one row, its later rows' keys
    # partly from the L2
    assert idx_us("flattened", 3) > 1.5 * idx_us("native", 3)
    assert np.isclose(idx_us("auto", 1), idx_us("native", 1)) and np.isclose(idx_us("auto", 3), idx_us("flattened", 3))


def test_a_flattened_requests_later_rows_hit_the_l2_as_the_schedules_reuse_distance_allows():
    from simulator.strategies.dsa import flattened_rows_hit

    l2 = 50 * 2**20
    # 32 rows x 128 items over 132 SMs: the same item 4 steps later on another SM (~18 MB between): hits
    assert float(flattened_rows_hit(32, 32768, 132, l2, 132.0)) > 0.85
    # 96 rows x 64 items: 17.5 or 29 steps apart (~78 / 129 MB): mostly misses by min(1, L2 / distance)
    assert float(flattened_rows_hit(96, 16384, 132, l2, 132.0)) < 0.7


def _hit_by_enumeration(B, N, g, sms, l2, key_bytes, share):
    """Every item of the launch placed by the metadata's even deal, each re-read's gap to the nearest earlier read of
    the same keys counted item by item (the brute force flattened_rows_hit_schedule samples)."""
    T = int(np.ceil(N / 256))
    p = np.arange(B * T)
    P = B * T / sms
    step = p - np.floor(np.floor(p / P) * P)
    key = ((p // T) // g) * T + p % T
    order = np.lexsort((step, key))
    k, s = key[order], step[order]
    later = np.r_[False, k[1:] == k[:-1]]
    gap = np.r_[0.0, np.diff(s)]
    dist = np.maximum(gap, 1.0) * 256 * key_bytes * sms / l2
    return float((later & (dist <= share)).sum() / later.sum())


def test_the_schedule_rule_counts_each_rows_nearest_earlier_read_of_its_requests_keys():
    from simulator.strategies.dsa import FLATTENED_L2_REUSE_SHARE, flattened_rows_hit_schedule

    l2 = 50 * 2**20
    for B, N, g in ((96, 16384, 2), (64, 49152, 2), (24, 65536, 3), (80, 24576, 4), (128, 16384, 4)):
        got = float(flattened_rows_hit_schedule(B, N, g, 132, l2, 132.0))
        want = _hit_by_enumeration(B, N, g, 132, l2, 132.0, FLATTENED_L2_REUSE_SHARE)
        assert abs(got - want) < 0.06, (B, N, g, got, want)
    # vectorized over shapes, one call
    v = flattened_rows_hit_schedule(np.array([96, 128]), np.array([16384, 16384]), np.array([2, 4]), 132, l2, 132.0)
    assert v.shape == (2,) and v[0] < 0.1 and v[1] > 0.9


def test_the_mtp_rows_grid3_verdict_holds_on_its_committed_prices_and_measurements():
    """Grid 3 (priced before its call) as the report judges it: the shipped schedule rule meets both flattened
    regimes, the soft rule only the rows of 3-4; and the shipped model reproduces the committed candidate prices (the
    rule's exact form against the 64 sampled offsets it was priced with: within 0.25 %)."""
    from hwmodels.spec import load_hardware
    from simulator.calibration import indexer_mtp_h200 as M

    g = M.measured3()
    assert g is not None and len(g) == 18
    hw = load_hardware("H200")
    for r in g.itertuples():
        assert abs(M.kernel_us(hw, r.batch, r.context, r.next_n, r.expand) / r.pred_us - 1.0) < 2.5e-3
    f = g[g["set"].str.startswith("flattened")]

    def met(col):
        e = (f[col] / f["median_us"] - 1.0).abs() * 100.0
        by = e.groupby(f["set"])
        return int(((by.median() <= 10.0) & (by.quantile(0.9) <= 25.0)).sum())
    assert met("pred_us") == 2 and met("pred_main_us") == 1


def test_the_mtp_rows_grid4_re_judges_the_shipped_rule_and_grids_3_and_4_pooled_hold_it():
    """Grid 4 (a second draw of grid 3's rule, priced before its call by the shipped rule): its prices are the model's,
    and the pooled 34 flattened rows of grids 3 and 4 meet both regimes under the shipped rule."""
    import pandas as pd

    from hwmodels.spec import load_hardware
    from simulator.calibration import indexer_mtp_h200 as M

    g4 = M.measured4()
    assert g4 is not None and len(g4) == 20
    hw = load_hardware("H200")
    for r in g4.itertuples():
        assert abs(M.kernel_us(hw, r.batch, r.context, r.next_n, r.expand) / r.pred_us - 1.0) < 2.5e-3
    f = pd.concat([M.measured3(), g4])
    f = f[f["set"].str.startswith("flattened")]
    e = (f["pred_us"] / f["median_us"] - 1.0).abs() * 100.0
    by = e.groupby(f["set"])
    assert len(f) == 34 and bool(((by.median() <= 10.0) & (by.quantile(0.9) <= 25.0)).all())
