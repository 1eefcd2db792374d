"""kv_policy: streamingllm | snapkv | snapstream — ring-buffer arithmetic, budgets, prefill ops, on-chip rule."""
import numpy as np
import pytest

from simulator import memory
from simulator.combo import make_combo as make
from simulator.planner import onchip_overflow
from simulator.pricing import decode_ops, prefill_ops
from simulator.strategies.kv_compression import prefill_ring_ranges, ring_buffer_index, ring_buffer_positions


def test_figure4_ring_buffer_example():
    # SnapStream Fig. 4: L = 26, sink 1, recent 4 -> Range 1 = 21..24, Range 2 = 25..28; slots 0-1 from
    # Range 2, slots 2-3 from Range 1; decoding token 27 replaces token 23
    r1, r2, off = prefill_ring_ranges(26, 1, 4)
    assert (r1, r2, off) == (21, 25, 1)
    assert ring_buffer_positions(26, 1, 4) == [25, 26, 23, 24]
    assert ring_buffer_index(27, 1, 4) == 1 + 2                # ring slot 2 (after the sink) held token 23
    assert [ring_buffer_index(p, 4, 8) for p in range(4)] == [0, 1, 2, 3]  # sinks keep their own slots


@pytest.mark.parametrize("L,sink,recent", [(26, 1, 4), (100, 4, 16), (4096, 4, 1024), (17, 4, 16), (9, 4, 8)])
def test_ring_buffer_listings_agree(L, sink, recent):
    pos = ring_buffer_positions(L, sink, recent)
    assert sorted(p - sink for p in pos) == sorted(set(p - sink for p in pos))  # distinct tokens
    for j, p in enumerate(pos):
        # Listing 5 writes the token `recent` positions after a slot's occupant into that same slot
        assert ring_buffer_index(p + recent, sink, recent) == sink + j
    # consecutive decode tokens cycle through every recent slot once
    slots = {ring_buffer_index(L + i, sink, recent) for i in range(recent)}
    assert slots == set(range(sink, sink + recent))


def test_budgets_cap_cache_and_kernel():
    c = make("H100-SXM", "Llama-3.1-8B", kv_policy="streamingllm")
    assert c.kv_policy.cached_tokens(c, np.array([100.0, 65536.0])).tolist() == [100.0, 4096.0]
    s = make("H100-SXM", "Llama-3.1-8B", kv_policy={"snapstream": {"budget_tokens": 8192}})
    assert s.kv_policy.attended_tokens(s, np.array([65536.0]))[0] == 8192.0
    ops, _ = decode_ops(s, np.array([1.0]), np.array([65536.0]))
    df = ops.to_frame().set_index("name")
    assert df.loc["attention"].flops == pytest.approx(4 * 32 * 8192 * 128)   # the budget, not the context
    # a rule between the value's own parameters is an error when the value is read (not a skip at pricing)
    from hwmodels.errors import ScenarioError

    with pytest.raises(ScenarioError, match="snapstream.recent_tokens.*exceed the budget"):
        make("H100-SXM", "Llama-3.1-8B", kv_policy={"snapstream": {"budget_tokens": 1024, "recent_tokens": 2048}})


def test_snapstream_prefill_ops():
    s = make("SN40L-16", "DeepSeek-R1", kv_policy="snapstream", tp=16, attn_dp=16)
    P = 131072.0
    df = prefill_ops(s, np.array([P])).to_frame().set_index("name")
    E = P - 4 - 4096                                          # eviction candidates between sinks and window
    sc = df.loc["snapkv_scores"]
    assert sc.flops == pytest.approx(2 * 8 * 32 * E * 192 + 5 * 8 * 32 * E)  # 128 heads / TP16, dk = 128 + 64
    assert sc["count"] == 61
    K = 32768 - 4 - 4096
    assert df.loc["snapkv_gather"].bytes_written == pytest.approx(K * 576 * 2)  # bf16 latent + rope key
    assert df.loc["ring_buffer"].bytes_read == pytest.approx((4 + 2 * 4096) * 576 * 2)
    full = make("SN40L-16", "DeepSeek-R1", tp=16, attn_dp=16)
    assert "snapkv_scores" not in prefill_ops(full, np.array([P])).names


def test_fixed_budget_raises_max_batch():
    full = make("SN40L-16", "DeepSeek-R1", tp=16, attn_dp=16)
    snap = make("SN40L-16", "DeepSeek-R1", kv_policy={"snapstream": {"budget_tokens": 32768}}, tp=16, attn_dp=16)
    C = np.array([131072.0])
    mf = memory.max_batch(full, full.kv_policy.cached_tokens(full, C))[0]
    ms = memory.max_batch(snap, snap.kv_policy.cached_tokens(snap, C))[0]
    assert 3.9 < ms / mf <= 4.2                                # KV dominates free memory: ~ 128K / 32K


def test_naive_update_onchip_rule():
    naive = make("SN40L-16", "DeepSeek-R1", kv_policy={"snapstream": {"decode_update": "naive"}}, tp=16, attn_dp=16)
    ring = make("SN40L-16", "DeepSeek-R1", kv_policy="snapstream", tp=16, attn_dp=16)
    b = np.array([64.0, 256.0])
    need = naive.kv_policy.onchip_bytes(naive, b, np.full(2, 131072.0))
    # 4 (16) sequences per socket x 32768 tokens x 576 elements of the shared latent (the cache layout) x 2 bytes
    assert need.tolist() == [4 * 32768 * 576 * 2, 16 * 32768 * 576 * 2]
    over, why = onchip_overflow(naive, b, np.full(2, 131072.0))
    assert over.tolist() == [False, True] and "520 MiB" in why and "naive" in why  # 151 MB fits, 604 MB does not
    assert not onchip_overflow(ring, b, np.full(2, 131072.0))[0].any()
    sep = make("SN40L-16", "DeepSeek-R1", attention={"dense": {"mla_cache": "separate_kv"}},
               kv_policy={"snapstream": {"decode_update": "naive"}}, tp=16, attn_dp=16)
    assert sep.kv_policy.onchip_bytes(sep, b[:1], np.full(1, 131072.0))[0] == 4 * 32768 * (576 + 512) * 2
    gpu = make("H100-SXM", "Llama-3.1-8B", kv_policy={"snapstream": {"decode_update": "naive"}})
    assert not onchip_overflow(gpu, np.array([4096.0]), np.array([131072.0]))[0].any()  # GPUs: HBM buffers
    # the naive update also copies the whole compressed cache every step; the ring adds nothing
    ops_n = decode_ops(naive, np.array([64.0]), np.array([65536.0]))[0]
    ops_r = decode_ops(ring, np.array([64.0]), np.array([65536.0]))[0]
    assert "kv_concat_update" in ops_n.names and "kv_concat_update" not in ops_r.names


def test_separate_kv_latents_move_both_tensors_in_prefill():
    """With key (576) and value (512) latents as two tensors, the ring buffer and the SnapKV gather move both:
    (576 + 512) x 2 bytes per token per layer, against 576 x 2 for the shared latent."""
    sep = make("SN40L-16", "DeepSeek-R1", attention={"dense": {"mla_cache": "separate_kv"}}, kv_policy="snapstream",
               tp=16, attn_dp=16)
    df = prefill_ops(sep, np.array([131072.0])).to_frame().set_index("name")
    assert df.loc["ring_buffer"].bytes_read == pytest.approx((4 + 2 * 4096) * (576 + 512) * 2)
    assert df.loc["snapkv_gather"].bytes_written == pytest.approx((32768 - 4 - 4096) * (576 + 512) * 2)
