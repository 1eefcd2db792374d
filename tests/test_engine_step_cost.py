"""Step prices (simulator/engine/step_cost.py): the decomposition equals the pricer's own op tables, the
chunked-prefill attention edit in dense.py, and the interpolation error against direct pricing."""
import numpy as np
import pytest

from hwmodels.roofline import price
from simulator import pricing
from simulator.combo import make_combo
from simulator.engine.step_cost import Composition, StepCostModel, kv_cache_blocks, refine_grid
from simulator.ops import OpBuilder
from simulator.strategies.base import StepShape


@pytest.fixture(scope="module")
def llama():
    c = make_combo("H100-SXM", "Llama-3.1-8B")
    return c, StepCostModel(c, 8192, 256)


def test_pure_decode_and_pure_prefill_steps_equal_the_pricers_op_tables(llama):
    c, m = llama
    for b, T in ((1, 4096.0), (7, 300.0), (100, 12345.0), (256, 100000.0)):
        ops, _ = pricing.decode_ops(c, np.array([float(b)]), np.array([T]))
        direct = price(ops, c.hardware, c.launch).sum()
        comp = Composition(total_tokens=b, logit_rows=b, n_decode=b, decode_ctx_sum=b * T)
        assert m.direct_step_s(comp) == pytest.approx(direct, rel=1e-12)
        assert m.step_s(comp) == pytest.approx(direct, rel=1e-3)
    for P in (17, 1000, 8192):
        ops = pricing.prefill_ops(c, np.array([float(P)]))
        direct = price(ops, c.hardware, "eager").sum()
        comp = Composition(total_tokens=P, logit_rows=1, chunks=((P, 0),), completes=(P,))
        assert m.direct_step_s(comp) == pytest.approx(direct, rel=1e-12)
        assert m.step_s(comp) == pytest.approx(direct, rel=1e-6)  # exact table in c at prefix 0


def test_chunk_attention_counts_the_prefix():
    # dense prefill_ops with kv_prefix: a chunk of c after o cached tokens has c(c+1)/2 + c*o causal pairs per
    # head: 4 * Hq * d flops per pair (Llama-3.1-8B: 32 heads of 128) per layer; the prefix's K/V is read
    c = make_combo("H100-SXM", "Llama-3.1-8B")
    b = OpBuilder(2)
    shape = StepShape(batch=np.ones(2), query_rows=np.array([512.0, 512.0]), context=np.array([512.0, 4608.0]),
                      phase="prefill", layers=32, kv_prefix=np.array([0.0, 4096.0]))
    c.attention.prefill_ops(b, c, shape)
    ops = b.build()
    pairs = np.array([512 * 513 / 2, 512 * 513 / 2 + 512 * 4096])
    assert ops.flops == pytest.approx(4 * 32 * 128 * pairs)
    assert ops.bytes_read[1] - ops.bytes_read[0] == pytest.approx(4096 * 2 * 8 * 128 * 2)  # K,V x 8 heads x bf16
    # without kv_prefix the whole-prompt cost is unchanged (the pricer's TTFT)
    b2 = OpBuilder(1)
    c.attention.prefill_ops(b2, c, StepShape(np.ones(1), np.array([512.0]), np.array([512.0]), "prefill", layers=32))
    assert b2.build().flops[0] == pytest.approx(ops.flops[0])


def test_strategies_without_kv_prefix_are_priced_by_difference():
    c = make_combo("H100-SXM", "Llama-3.1-8B", attention="lserve")
    m = StepCostModel(c, 2048, 64)
    assert not m.chunk_prefix_native
    whole = m._attn_prefill(np.array([6000.0]))[0]
    parts = m.price_chunk_attention(np.array([2000.0, 2000.0, 2000.0]), np.array([0.0, 2000.0, 4000.0]))
    assert (parts >= 0).all() and parts.sum() == pytest.approx(whole, rel=1e-9)


@pytest.mark.parametrize("hw,model,kw", [
    ("H100-SXM", "Llama-3.1-8B", {}),
    ("H200", "DeepSeek-V3", {"tp": 8}),
])
def test_interpolation_error_against_direct_pricing(hw, model, kw):
    """Random compositions (decode rows at any mean KV, a prefill chunk after any prefix). Body and head are
    exact tables and chunk costs exact in the chunk length; the rest is interpolated on grids refined until
    interpolation matches midpoints within 1e-4 on probe rows. Off the probe rows a roofline kink can sit
    a little elsewhere: the bound is 1e-3 (benchmarks/des_speed.py prints the measured distribution over more
    tuples: worst 1.8e-4 for these, up to 1e-2 for LServe, whose kernel shapes jump in batch and context)."""
    c = make_combo(hw, model, **kw)
    m = StepCostModel(c, 8192, 256)
    rng = np.random.default_rng(1)
    errs = []
    for _ in range(80):
        nd = int(rng.integers(0, 256))
        T = float(np.exp(rng.uniform(0, np.log(120000))))
        ch = []
        if nd == 0 or rng.random() < 0.5:
            o = int(np.exp(rng.uniform(0, np.log(100000)))) if rng.random() < 0.7 else 0
            ch = [(int(rng.integers(1, 8192 - nd + 1)), o)]
        comp = Composition(total_tokens=nd + sum(x for x, _ in ch), logit_rows=nd + len(ch), n_decode=nd,
                           decode_ctx_sum=nd * T, chunks=tuple(ch))
        errs.append(m.step_s(comp) / m.direct_step_s(comp) - 1)
    assert np.abs(errs).max() < 1e-3


def test_refine_grid_brackets_a_jump():
    f = lambda x: np.atleast_2d(np.where(x > 256.0, 2.0 * x + 50.0, 2.0 * x))
    g = refine_grid(np.array([1.0, 100.0, 1000.0]), f, min_width=1e-6)
    i = np.searchsorted(g, 256.0)
    assert g[i] - 256.0 < 1e-3 and 256.0 - g[i - 1] < 1e-3


def test_kv_cache_blocks_is_the_memory_left_over():
    # Llama-3.1-8B bf16 on an 80 GiB H100 at 0.9 utilization: 128 KiB of KV per token (32 layers x 8 KV heads
    # x 128 x 2 (K, V) x 2 bytes), so blocks = (0.9 x 80 GiB - weights - workspace) / (16 x 128 KiB)
    from simulator import memory

    c = make_combo("H100-SXM", "Llama-3.1-8B")
    free = 0.9 * c.hardware.hbm_capacity_bytes - memory.weight_bytes(c) - memory.workspace_bytes(c)
    assert kv_cache_blocks(c, 16, 8192) == int(free // (16 * 131072))
    assert kv_cache_blocks(c, 16, 2048) > kv_cache_blocks(c, 16, 8192)  # smaller workspace


def test_lazy_surface_rows_within_a_memory_budget_give_the_same_prices():
    """Decode surface rows are priced when first read; a budget holding only a few rows drops and re-prices them
    with the same values; a budget too small for the first rows is refused naming the knob."""
    from hwmodels.errors import SparsesimError
    from simulator.engine.sizing import PRICE_CHUNK_BYTES

    c = make_combo("H100-SXM", "Llama-3.1-8B", attention="nsa")
    big = StepCostModel(c, 2048, 64)
    assert big.per_row
    rows_bytes = 40 * len(big.t_grid)
    small = StepCostModel(c, 2048, 64, memory_budget_bytes=PRICE_CHUNK_BYTES + 10 * rows_bytes)
    assert small.dec.max_rows <= 5
    rng = np.random.default_rng(1)
    for _ in range(30):
        b = int(rng.integers(1, 65))
        ctx = np.exp(rng.uniform(np.log(100), np.log(100000), b)).round()
        comp = Composition(total_tokens=b, logit_rows=b, n_decode=b, decode_ctx_sum=float(ctx.sum()),
                           decode_ctx_max=float(ctx.max()), decode_ctx=tuple(ctx.tolist()))
        assert small.step_s(comp) == big.step_s(comp)
        # per row: the mean over the rows of decode(b, context_i), within 1e-3 of the rows priced directly
        assert small.step_s(comp) == pytest.approx(big.direct_step_s(comp), rel=1e-3)
    assert small.dec.rows_held <= small.dec.max_rows
    with pytest.raises(SparsesimError, match="memory_budget_gb"):
        StepCostModel(c, 2048, 64, memory_budget_bytes=PRICE_CHUNK_BYTES + rows_bytes)


def test_a_decode_run_prices_each_step_per_row():
    c = make_combo("H100-SXM", "Llama-3.1-8B", attention="nsa")
    m = StepCostModel(c, 2048, 64)
    ctx = np.array([[131000.0, 1000, 1000, 1000], [131001.0, 1001, 1001, 1001]])
    run = m.decode_run_s(4, 4, ctx.sum(axis=1), ctx.max(axis=1), ctx)
    for j in range(2):
        comp = Composition(total_tokens=4, logit_rows=4, n_decode=4, decode_ctx_sum=float(ctx[j].sum()),
                           decode_ctx_max=float(ctx[j].max()), decode_ctx=tuple(ctx[j].tolist()))
        assert run[j] == pytest.approx(m.step_s(comp), rel=1e-12)
