"""FlashInfer's MLAPlan planned causal (simulator/kernels/flashinfer.py fi_mla_causal_plan / fi_mla_extend): the
source's rules (scheduler.cuh @ FI_COMMIT packed_causal_kv_end, kv_len_limit, the least-loaded greedy) checked on hand
counts, and the decode plan recovered at one row."""
import numpy as np
import pytest

from simulator.kernels import flashinfer as FI


def test_each_q_tile_reaches_the_prefix_plus_the_queries_its_packed_rows_cover():
    # 512 new rows x 16 heads = 8192 packed rows, a cluster tile of 128 = 8 queries: 64 tiles, last first
    lens = FI.mla_causal_tile_lens(512, 4608, 16, 128)
    assert len(lens) == 64
    assert lens[0] == 4608                                   # the last tile reaches every key
    assert lens[-1] == 4096 + 8                              # the first: the prefix + its 8 queries
    assert np.all(np.diff(lens[1:]) == -8)
    # 128 heads: a tile is one query; 2 new rows over no prefix
    assert FI.mla_causal_tile_lens(2, 2, 128, 128) == [2, 1]
    # heads that do not divide the tile (192 packed rows, 2 tiles): the first covers ceil(128 / 48) = 3 queries
    assert FI.mla_causal_tile_lens(4, 10, 48, 128) == [10, 6 + 3]


def test_the_causal_plans_kv_len_limit_and_pieces_follow_the_source_by_hand():
    pl = FI.fi_mla_causal_plan(1, 512, 4608, 16, 132)
    total = sum(FI.mla_causal_tile_lens(512, 4608, 16, 128))
    assert pl["tokens"] == total
    clusters = 132 // 2
    assert pl["cluster"] == 2 and pl["clusters"] == clusters
    limit = -(-(-(-total // clusters)) // 256) * 256         # f(x) = ceil(x / 256) x 256 past 64
    assert pl["kv_len_limit"] == limit
    pieces = sum(max(-(-x // limit), 1) for x in FI.mla_causal_tile_lens(512, 4608, 16, 128))
    assert pl["pieces"] == pieces and pl["split"]
    # the greedy leaves the busiest cluster within one item of the mean
    assert pl["items"] <= -(-pieces // clusters) + 1


@pytest.mark.parametrize("B,T,H", [(1, 4096, 128), (8, 1000, 128), (3, 70000, 128), (64, 2048, 128)])
def test_one_row_per_request_plans_as_the_decode_call(B, T, H):
    causal, decode = FI.fi_mla_causal_plan(B, 1, T, H, 132), FI.fi_mla_plan(B, 1, T, H, 132)
    for k in ("cluster", "kv_len_limit", "pieces", "items", "stages", "stage_units", "first_tokens", "split",
              "merge_loads"):
        assert np.allclose(causal[k], decode[k]), k


def test_an_extend_prices_one_cooperative_launch_of_the_mla_kind_and_grows_with_its_rows():
    hw = 132
    short, _ = FI.fi_mla_extend(1, 256, 4352, 16, 512.0, 64.0, 2.0, 1.0, hw)
    long_, _ = FI.fi_mla_extend(1, 2048, 6144, 16, 512.0, 64.0, 2.0, 1.0, hw)
    assert len(short) == 1 and short[0].kind == "attn_fi_mla"
    # the busiest cluster's chain (items x stages) grows with the new rows over the same prefix
    assert np.all(long_[0].serial_iters * FI.fi_mla_causal_plan(1, 2048, 6144, 16, hw)["items"]
                  > short[0].serial_iters * FI.fi_mla_causal_plan(1, 256, 4352, 16, hw)["items"])
    # the re-read prefix is credited to the L2, never more than what is read
    assert np.all(short[0].reread_bytes <= short[0].bytes_read)


def _reference_causal_plan(B, P, T, H, sms=132):
    """The causal plan for one shape from the source's loops as written (mla_causal_tile_lens, the heap of
    FI._mla_assign, the merge CTAs of each split tile)."""
    cl = 2 if P * H > 64 else 1
    C, R = sms // cl, 64 * cl
    lens = FI.mla_causal_tile_lens(P, T, H, R)
    total = B * sum(lens)
    limit = float(FI.mla_kv_limit(max(-(-total // C), 1)))
    items, _, stages, units, first = FI._mla_assign(tuple(lens) * B, limit, C, float(R), FI.FI_MLA_PARTIAL_STAGE_SHARE)
    ml = mi = 0.0
    for t, x in zip(range(len(lens) - 1, -1, -1), lens):
        if x <= limit:
            continue
        rows, ch = min(R, P * H - t * R), max(x * cl // int(limit), 1)
        it = -(-(-(-rows // ch)) // 4)
        ld = it * (-(-x // int(limit)) + FI.FI_MLA_MERGE_ROW_LINKS)
        if ld > ml:
            ml, mi = ld, it
    return {"kv_len_limit": limit, "pieces": B * sum(max(-(-x // int(limit)), 1) for x in lens), "items": items,
            "stages": stages, "stage_units": units, "first_tokens": first, "split": any(x > limit for x in lens),
            "merge_iters": mi, "merge_loads": ml, "tokens": total}


def test_the_vectorized_causal_plan_is_the_heaps_plan_shape_by_shape():
    rng = np.random.default_rng(7)
    n = 60
    B = rng.integers(1, 4, n)
    P = np.r_[rng.integers(1, 16, 15), rng.integers(16, 1500, n - 15)]
    O = rng.integers(0, 30000, n)
    H = rng.choice([8, 16, 32, 48, 64, 128], n)
    pl = FI.fi_mla_causal_plan(B, P, P + O, H, 132)
    for i in range(n):
        ref = _reference_causal_plan(int(B[i]), int(P[i]), int(P[i] + O[i]), int(H[i]))
        for k, v in ref.items():
            assert pl[k][i] == pytest.approx(v), (B[i], P[i], O[i], H[i], k)


def test_the_vectorized_decode_plan_is_the_heaps_plan_shape_by_shape():
    rng = np.random.default_rng(8)
    n = 300
    B = rng.integers(1, 400, n).astype(float)
    q = rng.choice([1, 2, 4], n).astype(float)
    T = np.r_[rng.integers(0, 200, 60), rng.integers(200, 150000, n - 60)].astype(float)
    H = rng.choice([16, 64, 128], n).astype(float)
    pl = FI.fi_mla_plan(B, q, T, H, 132)
    for i in range(n):
        cl = 2.0 if q[i] * H[i] > 64 else 1.0
        tiles = int(B[i] * np.ceil(q[i] * H[i] / (64 * cl)))
        ref = FI._mla_assign((T[i],) * tiles, float(pl["kv_len_limit"][i]), int(132 // cl), 64 * cl,
                             FI.FI_MLA_PARTIAL_STAGE_SHARE)
        got = (pl["items"][i], ref[1], pl["stages"][i], pl["stage_units"][i], pl["first_tokens"][i])
        assert got == pytest.approx(ref), (B[i], q[i], T[i], H[i])


def test_the_replay_deals_equal_costs_to_the_lowest_index_and_reports_the_highest_index_busiest():
    from simulator.kernels.mla_greedy import busiest
    # 5 equal pieces over 3 clusters: 0, 1, 2, 0, 1 -> clusters 0 and 1 hold 2 (the heap's max: the highest, 1)
    sizes = np.full((1, 5), 64.0)
    got = busiest(sizes, np.array([5]), np.array([3]), np.array([64.0]), 1.0)
    assert got[:, 0].tolist() == [2.0, 128.0, 2.0, 2.0, 128.0]
    # a big piece first: the small ones fill the others, then the least loaded
    sizes = np.array([[1000.0, 10.0, 10.0, 10.0]])
    got = busiest(sizes, np.array([4]), np.array([2]), np.array([64.0]), 1.0)
    assert got[0, 0] == 1.0 and got[1, 0] == 1000.0
    ref = FI._mla_assign((1000.0, 10.0, 10.0, 10.0), 1000.0, 2, 64.0, 1.0)
    assert (got[0, 0], got[1, 0]) == (ref[0], ref[1])


def test_the_engine_prices_fi_mla_chunks_on_a_grid_of_lengths_and_other_kernels_at_every_length():
    from simulator.combo import make_combo
    from simulator.strategies.base import parse_axis
    grid = {}
    for kernel, model in (("fi_mla", "DeepSeek-V3"), ("flashmla", "DeepSeek-V3"), ("fa3", "Llama-3.1-8B")):
        att = parse_axis("attention", [{"dense": {"kernel": kernel}}])[0]
        c = make_combo("H200", model, attention=att, tp=8)
        grid[kernel] = c.attention.chunk_grid_ratio(c)
    assert grid["fi_mla"] > 1.0 and grid["flashmla"] == 0.0 and grid["fa3"] == 0.0
