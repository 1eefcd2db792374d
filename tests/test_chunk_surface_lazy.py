"""The engine's chunk surface priced a prefix column at a time when first read (simulator/engine/step_cost.py
ChunkSurface) and the prefill schedules' emulation memo it keeps (simulator/kernels/emulation_memo.py): the lookups
are those of the whole table priced at once (at every chunk length with CHUNK_ALIGN 0; within CHUNK_ALIGN_TOL at the
tile-aligned lengths), and a memo never hands back a value the emulation would not."""
from __future__ import annotations

import numpy as np
import pytest

import simulator.engine.step_cost as SC
import simulator.kernels.production as PR
from simulator.combo import make_combo
from simulator.engine.step_cost import StepCostModel
from simulator.kernels import emulation_memo


def test_columns_are_priced_only_when_a_lookup_reads_them():
    c = make_combo("H100-SXM", "Llama-3.1-8B", attention={"dense": {"kernel": "fa3"}})
    m = StepCostModel(c, 256, 8, max_context=16384)
    ch = m.chunks
    assert len(ch.o_list) > 40 and ch.built == 0
    m.chunk_s(200, 5000)
    j = int(np.searchsorted(ch.o_list, 5000, side="right")) - 1
    assert [i for i, col in enumerate(ch.cols) if col is not None] == [j, j + 1]
    assert m.chunk_stats()["chunk_cols_built"] == ch.built == 2
    m.chunk_s(201, 5001)   # between the same two prefix points
    assert ch.built == 2


def _whole_table_lookups(m, n=60, seed=3):
    """(lookup, the whole table at every length priced at once, interpolated in o as the surface is) at n pairs."""
    o_grid = np.asarray(m.chunks.o_list)
    R = np.arange(1, m.max_tokens + 1, dtype=np.float64)
    cc, oo = np.meshgrid(R, o_grid, indexing="ij")
    with emulation_memo.active(emulation_memo.EmulationMemo()):   # one call, its own memo: the table of before
        whole = np.vstack([np.zeros((1, len(o_grid))),
                           m._attn_prefill(cc.ravel(), oo.ravel()).reshape(cc.shape)])
    rng = np.random.default_rng(seed)
    out = []
    for c, o in zip(rng.integers(1, m.max_tokens + 1, n), rng.integers(0, 32768, n)):
        j = min(int(np.searchsorted(o_grid, o, side="right")) - 1, len(o_grid) - 2)
        want = whole[c, j] + (whole[c, j + 1] - whole[c, j]) * (o - o_grid[j]) / (o_grid[j + 1] - o_grid[j])
        out.append((m.chunk_s(int(c), int(o)), want))
    return np.array(out)


def test_lookups_equal_the_whole_table_priced_at_once_at_every_length(monkeypatch):
    monkeypatch.setattr(SC, "CHUNK_ALIGN", 0)   # every chunk length priced: the lookups are the table's exactly
    c = make_combo("H100-SXM", "Llama-3.1-8B", attention={"dense": {"kernel": "fa3"}})
    got = _whole_table_lookups(StepCostModel(c, 512, 16, max_context=32768))
    assert np.array_equal(got[:, 0], got[:, 1])


@pytest.mark.parametrize("model", ["Llama-3.1-8B", "Minitron-4B"])   # Minitron: 3 query heads a KV head, tiles of 128 / 3
def test_aligned_lengths_price_as_every_length_within_the_tolerance(model):
    assert SC.CHUNK_ALIGN == 16
    c = make_combo("H100-SXM", model, attention={"dense": {"kernel": "fa3"}})
    got = _whole_table_lookups(StepCostModel(c, 512, 16, max_context=32768), n=150, seed=4)
    assert np.all(np.abs(got[:, 0] / got[:, 1] - 1.0) <= 2e-4)


def test_a_jump_off_the_multiples_of_16_is_flagged_and_a_straight_line_is_not():
    c_pts = SC._aligned_grid(256, 64, 16)
    assert {64.0, 65.0, 80.0, 81.0, 256.0} <= set(c_pts) and 70.0 not in c_pts
    lin = 3.0 + 0.5 * c_pts
    step = lin + 40.0 * (c_pts >= 171)   # a tile of 128 / 3 rows ends at 170.7: inside the segment 161 .. 176
    curve = lin + 1e-6 * c_pts ** 2      # smooth: within the tolerance
    tab = np.vstack([lin, step, curve])
    rows, segs = SC._unaligned_jumps(c_pts, tab, SC.CHUNK_ALIGN_TOL)
    assert list(rows) == [1] and [(c_pts[s], c_pts[s + 1]) for s in segs] == [(161.0, 176.0)]
    aligned = lin + 40.0 * (c_pts >= 129)   # a step between 128 and 129: a priced pair, nothing to flag
    assert len(SC._unaligned_jumps(c_pts, aligned[None, :], SC.CHUNK_ALIGN_TOL)[0]) == 0


def _launches(n=40, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.integers(600, 4000, n).astype(float)
    return [np.ones(n), q, q + rng.integers(0, 9000, n), np.full(n, 4.0), np.full(n, 128.0), np.full(n, 128.0),
            np.full(n, 8.0), np.full(n, 132.0)]


def test_the_memo_returns_what_the_emulation_returns_and_is_used_only_inside_its_block():
    a = _launches()
    plain = PR._lpt_ratio(*a)
    memo = emulation_memo.EmulationMemo()
    with emulation_memo.active(memo):
        first = PR._lpt_ratio(*a)
        misses = memo.misses
        again = PR._lpt_ratio(*a)
    assert np.array_equal(plain, first) and np.array_equal(plain, again)
    assert misses > 0 and memo.misses == misses and memo.hits >= misses
    PR._lpt_ratio(*a)   # outside the block: no memo read or filled
    assert memo.misses == misses


def test_the_memo_keys_the_group_size_the_emulation_reads(monkeypatch):
    a = _launches(seed=1)
    memo = emulation_memo.EmulationMemo()
    with emulation_memo.active(memo):
        PR._lpt_ratio(*a)
        monkeypatch.setattr(PR, "LPT_EXACT", True)   # one job at a time: another group size, another value
        exact = PR._lpt_ratio(*a)
    assert np.array_equal(exact, PR._lpt_ratio(*a))


def test_the_in_order_emulation_goes_through_the_memo_too():
    n = 30
    rng = np.random.default_rng(2)
    q = rng.integers(300, 3000, n).astype(float)
    args = [np.ones(n), q, q + rng.integers(0, 5000, n), np.full(n, 4.0), np.full(n, 64.0), np.full(n, 64.0),
            np.full(n, 1e9), np.full(n, 8.0), np.full(n, 264.0)]
    plain = PR._inorder_ratio(*args)
    memo = emulation_memo.EmulationMemo()
    with emulation_memo.active(memo):
        assert np.array_equal(PR._inorder_ratio(*args), plain)
    assert memo.misses > 0 and "inorder" in memo.tables


def test_a_full_memo_starts_again():
    memo = emulation_memo.EmulationMemo(max_entries=10)
    keys = np.arange(24, dtype=np.float64).reshape(12, 2)
    out = memo.lookup("x", keys, lambda k: k.sum(axis=1))
    assert np.array_equal(out, keys.sum(axis=1)) and len(memo) == 12   # emptied first, then the call's own rows kept
    out = memo.lookup("x", keys[:3] + 100.0, lambda k: k.sum(axis=1))
    assert len(memo) == 3 and np.array_equal(out, (keys[:3] + 100.0).sum(axis=1))


def test_distinct_op_rows_price_as_the_whole_table():
    from hwmodels.roofline import price
    from simulator.engine.step_cost import StepCostModel as M

    c = make_combo("H100-SXM", "Llama-3.1-8B", speculation={"eagle3": {"k": 4}})
    m = M.__new__(M)
    m.combo, m._layers, m._has_draft = c, c.model.layers, True
    b = m._decode_builder(np.repeat([1.0, 8.0, 64.0], 40), np.tile(np.geomspace(64, 60000, 40), 3))
    ops = b.build()
    uniq, inv = ops.distinct_rows()
    assert len(uniq) < len(ops) / 2   # the drafter's forward repeats at every context
    assert np.array_equal(price(uniq, c.hardware, "graph")[inv], price(ops, c.hardware, "graph"))
    assert np.array_equal(m._price_rows(ops, "graph"), price(ops, c.hardware, "graph"))


def test_distinct_rows_survive_a_hash_that_merges_unequal_rows(monkeypatch):
    import simulator.ops as OPS
    from simulator.engine.step_cost import StepCostModel as M

    c = make_combo("H100-SXM", "Llama-3.1-8B", speculation={"eagle3": {"k": 4}})
    m = M.__new__(M)
    m.combo, m._layers, m._has_draft = c, c.model.layers, True
    ops = m._decode_builder(np.repeat([1.0, 8.0], 30), np.tile(np.geomspace(64, 60000, 30), 2)).build()
    want, want_inv = ops.distinct_rows()
    monkeypatch.setattr(OPS, "_ROW_HASH_MUL", np.uint64(0))   # the hash is then the last column's alone: collisions
    got, inv = ops.distinct_rows()
    assert len(got) == len(want)
    for col in ("flops", "bytes_read", "kind", "name_id"):
        assert np.array_equal(getattr(got, col)[inv], getattr(ops, col))
        assert np.array_equal(getattr(want, col)[want_inv], getattr(ops, col))
