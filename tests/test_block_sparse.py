"""attention: lserve | streaming | quest | paged — block-sparse decode accounting, OmniServe's kernel loop,
memory, fixed values instead of hidden defaults, refusals, the LServe scenario."""
import numpy as np
import pytest

from simulator.combo import make_combo as make
from simulator.ops import OpBuilder
from simulator.planner import combo_refusal
from simulator.precision import DTYPE_BYTES
from simulator.strategies.base import StepShape, parse_axis
from simulator.strategies.block_sparse import omniserve_attention_iters, page_bw_efficiency

L3 = "Llama-3-8B-Gradient-1048k"


def _ops(combo, T, batch=1.0):
    n = 1
    shape = StepShape(batch=np.full(n, batch), query_rows=np.ones(n), context=np.full(n, float(T)),
                      phase="decode", layers=combo.model.layers)
    b = OpBuilder(n)
    combo.attention.decode_ops(b, combo, shape)
    return b.build().to_frame().set_index("name")


def test_page_efficiency_from_qserve_table():
    # LServe Table 1: (50.6 - 10.5) / (77.1 - 11.0) = 40.1 / 66.1; (50.6 - 10.5) / (51.0 - 10.5) = 40.1 / 40.5
    assert page_bw_efficiency(16) == pytest.approx(40.1 / 66.1)
    assert page_bw_efficiency(32) == pytest.approx(40.1 / 52.3)
    assert page_bw_efficiency(64) == pytest.approx(40.1 / 40.5)
    assert page_bw_efficiency(128) == 1.0 and page_bw_efficiency(512) == 1.0
    assert page_bw_efficiency(8) == page_bw_efficiency(16)


def test_omniserve_attention_loop_iterations():
    # d = 128, fp16 queries: 16 threads per key / value -> 16 tiles; K and V loops 256 / 16 x 4 = 64 tokens per
    # iteration, logit and normalization loops 256 tokens each. Budget 4096 (multi-block): ceil(4096 / 16) = 256
    # tokens per CTA (4 pages of 64) -> 4 + 4 + 2 x 1 = 10 iterations; 8192 -> 512 tokens -> 8 + 8 + 2 x 2 = 20.
    it, tiles = omniserve_attention_iters(np.array([4096.0, 8192.0, 1000.0]), 128, 64, 2048)
    assert it.tolist() == [10.0, 20.0, 2 * 16 + 2 * 4] and tiles.tolist() == [16.0, 16.0, 1.0]


def test_lserve_decode_bytes_and_selector():
    c = make("A100-80GB", L3, attention="lserve", kv_dtype="int4", weight_dtype="int8")
    kvb = DTYPE_BYTES["int4"]
    df = _ops(c, 131072)
    # 8 KV heads, half streaming: dense heads 4096 / 64 = 64 pages, streaming heads 2 + 4 pages (128 + 256 tokens)
    tokens = (0.5 * 64 + 0.5 * 6) * 64                       # 2240 tokens per KV head on average
    kv = 8 * tokens * 2 * 128 * kvb / page_bw_efficiency(64)
    att = df.loc["attention"]
    # one CTA per query head: the 4 query heads of a group each stream their KV head (3 re-reads for L2)
    assert att.bytes_read == pytest.approx(4 * kv + 16 * 32 * 128 * 2)
    assert att.reread_bytes == pytest.approx(3 * kv) and att.working_set == pytest.approx(kv)
    assert att.parallel_units == 32 * 16 and att.serial_iters == 10
    assert att.flops == pytest.approx(4 * 32 * tokens * 128)
    assert att["count"] == 32
    sel = df.loc["page_selector"]
    # OmniServe's selector: one CTA per dense query head (16 of 32) walking 131072 / 16 = 8192 logical pages
    # of (k_min, k_max) x 128 fp16 channels of its KV head; the 4 query heads of a group each read them
    stats = 4 * 8192 * 2 * 128 * 2
    assert sel.bytes_read == pytest.approx(4 * stats + 16 * 128 * 2)
    assert sel.parallel_units == 16
    assert sel.serial_iters == 8192 / 64                     # 16 threads per page x 4 unrolled: 64 pages / iter
    assert sel["count"] == 32 / 4                            # once per reuse interval of 4 steps
    assert df.loc["page_index_fixup"]["count"] == 4 * 32 / 4   # ones_like, mul, cat, cast per selector call
    assert df.loc["attention_partials_zero"]["count"] == 4 * 32
    df2 = _ops(c, 262144)
    assert df2.loc["page_selector"].serial_iters == 2 * sel.serial_iters
    assert df2.loc["attention"].bytes_read == pytest.approx(att.bytes_read)   # constant once T > budget
    assert "page_selector" not in _ops(c, 4096).index


def test_lserve_memory_separate_caches():
    c = make("A100-80GB", L3, attention="lserve")
    got = c.attention.cached_tokens(c, np.array([131072.0, 100.0]))
    # dense half keeps every token + key statistics (1/16 of a token), streaming half its 384-token window
    assert got[0] == pytest.approx(0.5 * 131072 * (1 + 1 / 16) + 0.5 * 384)
    assert got[1] == pytest.approx(0.5 * 100 * (1 + 1 / 16) + 0.5 * 100)


def test_streaming_heads_static_only_and_prefill_window():
    c = make("A100-80GB", L3, attention="streaming")
    df = _ops(c, 65536)
    assert "page_selector" not in df.index
    assert df.loc["attention"].flops == pytest.approx(4 * 32 * (0.5 * 65536 + 0.5 * 384) * 128)
    # prefill: streaming heads attend to 128 sink + 8192 local tokens (OmniServe benchmark.sh), dense heads causally
    from simulator.pricing import prefill_ops

    P = 32768.0
    pf = prefill_ops(c, np.array([P])).to_frame().set_index("name").loc["attention"]
    pairs = 0.5 * P * (P + 1) / 2 + 0.5 * P * (128 + 8192)
    assert pf.flops == pytest.approx(4 * 32 * pairs * 128)


def test_paged_dense_is_vllm_pagedattention():
    v = make("A100-80GB", L3, attention="paged", kv_dtype="fp8")
    df = _ops(v, 65536)
    # every page of every head, 16-token pages at eff(16), v2 partitions of 512 tokens
    assert df.loc["attention"].bytes_read == pytest.approx(
        8 * 65536 * 2 * 128 * DTYPE_BYTES["fp8"] / page_bw_efficiency(16) + 128 * 32 * 128 * 2)
    assert df.loc["attention"].parallel_units == 8 * 128
    assert "page_selector" not in df.index and "attention_partials_zero" not in df.index
    assert v.attention.cached_tokens(v, np.array([1000.0]))[0] == 1000.0


def test_fixed_values_not_hidden_defaults():
    [q] = parse_axis("attention", ["quest"])
    assert q._v("streaming_fraction") == 0.0 and q._v("reuse_interval") == 1 and q.logical_page == 16
    [s] = parse_axis("attention", ["streaming"])
    with pytest.raises(KeyError):
        s._v("token_budget_typo")
    # every value a strategy reads is a parameter or FIXED (with its reason)
    for name in ("quest", "lserve", "streaming", "paged"):
        [a] = parse_axis("attention", [name])
        for key in ("page", "logical_page", "streaming_fraction", "sink_pages", "local_pages", "split_tokens",
                    "kernel", "prefill_sink_tokens", "prefill_local_tokens"):
            assert (key in a.params) != (key in a.FIXED), (name, key)   # exactly one source
            if key in a.FIXED:
                assert a.FIXED[key][1]                                 # with its reason
            a._v(key)


def test_quest_baseline_and_refusal():
    q = make("A100-80GB", "Llama-2-7B-64K-whatif", attention="quest", kv_dtype="fp16", weight_dtype="fp16")
    assert combo_refusal(q) is None
    df = _ops(q, 32768)
    assert df.loc["attention_dense_layers"]["count"] == 2 and df.loc["attention"]["count"] == 30
    assert df.loc["page_selector"]["count"] == 30            # every step, reuse interval 1
    assert df.loc["page_selector"].bytes_read == pytest.approx(32 * 2048 * 2 * 128 * 2 + 32 * 128 * 2)
    assert df.loc["attention"].bytes_read == pytest.approx(
        32 * 4096 * 2 * 128 * 2 / page_bw_efficiency(16) + 16 * 32 * 128 * 2)
    r = combo_refusal(make("A100-80GB", "Llama-3-8B", attention="quest"))
    assert "MHA models only" in r and "8 KV heads" in r
    assert "MLA" in combo_refusal(make("H100-SXM", "DeepSeek-R1", attention="quest", tp=8))
    assert "MLA" in combo_refusal(make("H100-SXM", "DeepSeek-R1", attention="lserve", tp=8))
    from hwmodels.errors import ScenarioError

    with pytest.raises(ScenarioError, match="lserve.page.*multiple of the logical page"):
        make("A100-80GB", L3, attention={"lserve": {"page": 64, "logical_page": 24}})


def test_lserve_reproduction_rows():
    """The reproduction's rows (its CLI run and PNGs are exercised by notebooks/lserve.ipynb's test)."""
    from simulator.figures import run_reproduction
    from simulator.scenario import load_scenario

    rep = run_reproduction("lserve_a100", load_scenario("lserve_a100"))
    df = rep.frame().set_index("quantity")
    assert df.loc["sec. 5.3 selector saving at reuse interval 4", "kind"] == "identity"
    assert df.loc["Fig. 12 block-sparse prefill kernel vs MInference's", "class"] == "missed"   # a model gap
    v = df.loc["Table 7 vLLM decode, 64k"]
    assert "bf16 weights" in v.alternatives and "fp8 KV" in v.alternatives and "eff 1" in v.sensitivity
    assert "W8A8" in v.config and "bf16 KV" in v.config                  # sec. 4.1 + vLLM defaults, not Table 7
    ls = df.loc["Table 7 LServe decode, 64k"]
    assert "loop iteration x2" in ls.sensitivity and "median lent host" in ls.sensitivity
    assert df.loc["Table 7 speedup, 64k", "class"] == "check"            # a ratio of two counted rows
    assert df.loc["Fig. 16 static + dynamic, max (caption)", "class"] == "not reproducible"   # text vs caption
    f2 = df.loc["Fig. 2 decode attention share, 128K", "alternatives"]
    assert f2.startswith("OmniServe dense") and "TensorRT-LLM" in f2     # the engine LServe names is primary
    assert "cold cost" in df.loc["Table 5 Quest prefill, 4k", "note"]
    f15 = df.loc["Fig. 15 static + dynamic at 256K (+ amortized selector)"]
    assert "attention kernel only, eager" in f15.alternatives
    pool = df.loc["sec. 5.3 one min/max pooling kernel, 128K"]
    assert pool["class"] == "bound" and pool["status"] == "holds"       # under the 1 ms bound, not counted
    assert rep.summary_line().startswith("lserve_a100:")
