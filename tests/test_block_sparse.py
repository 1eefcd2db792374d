"""attention: lserve | streaming | quest — block-sparse decode accounting, memory, refusals, LServe scenario."""
import numpy as np
import pytest

from simulator.cli import main
from simulator.ops import OpBuilder
from simulator.planner import combo_refusal
from simulator.precision import DTYPE_BYTES
from simulator.strategies.base import StepShape
from simulator.strategies.block_sparse import page_bw_efficiency
from simulator.figures.snapstream import make

L3 = "Llama-3-8B-Gradient-1048k"


def _ops(combo, T, batch=1.0):
    n = 1
    shape = StepShape(batch=np.full(n, batch), query_rows=np.ones(n), context=np.full(n, float(T)),
                      phase="decode", extra={"layers": combo.model.layers})
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


def test_lserve_decode_bytes_and_selector():
    c = make("A100-80GB", L3, attention="lserve", kv_dtype="int4", weight_dtype="int8")
    kvb = DTYPE_BYTES["int4"]
    df = _ops(c, 131072)
    # 8 KV heads, half streaming: dense heads 4096 / 64 = 64 pages, streaming heads 1 + 2 pages
    tokens = (0.5 * 64 + 0.5 * 3) * 64                       # 2144 tokens per KV head on average
    splits = 64 * 64 / 256                                   # 16 split-KV chunks
    att = df.loc["attention"]
    assert att.bytes_read == pytest.approx(8 * tokens * 2 * 128 * kvb / page_bw_efficiency(64) + splits * 32 * 128 * 2)
    assert att.flops == pytest.approx(4 * 32 * tokens * 128)
    assert att["count"] == 32
    sel = df.loc["page_selector"]
    # OmniServe's selector: one CTA per dense query head (16 of 32) walking 131072 / 16 = 8192 logical pages
    # of (k_min, k_max) x 128 fp16 channels of its KV head; the 4 query heads of a group each read them
    stats = 4 * 8192 * 2 * 128 * 2
    assert sel.bytes_read == pytest.approx(4 * stats + 16 * 128 * 2)
    assert sel.parallel_units == 16
    assert sel.serial_iters == 8192 / 64                     # 16 threads per page x 4 unrolled: 64 pages / iter
    assert sel.reread_bytes == pytest.approx(3 * stats) and sel.working_set == pytest.approx(stats)
    assert sel["count"] == 32 / 4                            # once per reuse interval of 4 steps
    assert df.loc["page_topk"].bytes_written == 32 * 63 * 12.0  # every query head: 64 - 1 pages (+ the newest)
    assert df.loc["page_index_fixup"]["count"] == 4 * 32 / 4   # ones_like, mul, cat, cast per selector call
    # multi-block attention (4096 attended tokens >= 2048): 4 zero-fills per layer per step
    assert df.loc["attention_partials_zero"]["count"] == 4 * 32
    # the selector is linear in the context; the attention is constant once T > budget
    df2 = _ops(c, 262144)
    assert df2.loc["page_selector"].bytes_read - 16 * 128 * 2 == pytest.approx(2 * (sel.bytes_read - 16 * 128 * 2))
    assert df2.loc["page_selector"].serial_iters == 2 * sel.serial_iters
    assert df2.loc["attention"].bytes_read == pytest.approx(att.bytes_read)
    # below the budget no page is selected
    assert "page_selector" not in _ops(c, 4096).index


def test_lserve_memory_separate_caches():
    c = make("A100-80GB", L3, attention="lserve")
    C = np.array([131072.0, 100.0])
    got = c.attention.cached_tokens(c, C)
    # dense half keeps every token + key statistics (1/16 of a token), streaming half its 192-token window
    assert got[0] == pytest.approx(0.5 * 131072 * (1 + 1 / 16) + 0.5 * 192)
    assert got[1] == pytest.approx(0.5 * 100 * (1 + 1 / 16) + 0.5 * 100)


def test_streaming_heads_static_only():
    c = make("A100-80GB", L3, attention="streaming")
    df = _ops(c, 65536)
    assert "page_selector" not in df.index
    assert df.loc["attention"].flops == pytest.approx(4 * 32 * (0.5 * 65536 + 0.5 * 192) * 128)
    d = make("A100-80GB", L3)
    # static sparsity: at long context close to 2x fewer KV bytes than dense (50 % streaming heads)
    ratio = _ops(d, 262144).loc["attention"].bytes_read / (_ops(c, 262144).loc["attention"].bytes_read
                                                          * page_bw_efficiency(64))
    assert 1.9 < ratio < 2.0


def test_quest_baseline_and_refusal():
    q = make("A100-80GB", "Llama-2-7B-64K-whatif", attention="quest", kv_dtype="fp16", weight_dtype="fp16")
    assert combo_refusal(q) is None
    df = _ops(q, 32768)
    assert df.loc["attention_dense_layers"]["count"] == 2 and df.loc["attention"]["count"] == 30
    assert df.loc["page_selector"]["count"] == 30            # every step, reuse interval 1
    # page 16, budget 4096 -> 256 pages of 16; fp16 statistics for all 32 heads over 32768 / 16 = 2048 pages
    assert df.loc["page_selector"].bytes_read == pytest.approx(32 * 2048 * 2 * 128 * 2 + 32 * 128 * 2)
    assert df.loc["attention"].bytes_read == pytest.approx(
        32 * 4096 * 2 * 128 * 2 / page_bw_efficiency(16) + 16 * 32 * 128 * 2)
    r = combo_refusal(make("A100-80GB", "Llama-3-8B", attention="quest"))
    assert "MHA models only" in r and "8 KV heads" in r
    assert "MLA" in combo_refusal(make("H100-SXM", "DeepSeek-R1", attention="quest", tp=8))
    assert "MLA" in combo_refusal(make("H100-SXM", "DeepSeek-R1", attention="lserve", tp=8))
    bad = make("A100-80GB", L3, attention={"lserve": {"page": 64, "logical_page": 24}})
    assert "multiple of the logical page" in combo_refusal(bad)


def test_lserve_scenario_end_to_end(tmp_path, capsys):
    assert main(["run", "scenarios/lserve_a100.yaml", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "LServe (seeds/004) on A100-80GB" in out and "Table 7 vLLM decode, 64K" in out
    assert "supports MHA models only" in out               # quest is refused and counted
    assert (tmp_path / "lserve_a100" / "reproduction.csv").is_file()
