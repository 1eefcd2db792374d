"""Every strategy family prices a step that never gets cheaper with more context or a larger batch.

(Dispatch rules are kept out on purpose: GVR falls back to radix below 12,288 tokens, and OmniServe's
LServe decode kernel switches to its multi-block path at 2,048 attended tokens (multiblock_switch), so a
slightly longer row can legitimately be cheaper. LServe is checked with the switch at 16 tokens, i.e. on
the multi-block path throughout.)"""
from dataclasses import replace

import numpy as np
import pytest

from simulator.planner import combo_refusal
from simulator.pricing import price_combo
from simulator.strategies.base import parse_axis
from tests.conftest import make_combo

CASES = [
    ("Llama-3.1-8B", "H100-SXM", {"attention": "nsa"}),
    ("Llama-3.1-8B", "H100-SXM", {"attention": {"lserve": {"multiblock_switch": 16}}}),
    ("Llama-3.1-8B", "H100-SXM", {"attention": "streaming"}),
    ("Llama-2-7B-64K-whatif", "A100-80GB", {"attention": "quest"}),
    ("DeepSeek-V3.2-Exp", "B200", {"attention": "dsa", "topk": "radix"}),
    ("Llama-3.1-8B", "H100-SXM", {"kv_policy": "streamingllm"}),
    ("Llama-3.1-8B", "H100-SXM", {"kv_policy": "snapkv"}),
    ("Llama-3.1-8B", "H100-SXM", {"kv_policy": "snapstream"}),
    ("Llama-3.1-8B", "H100-SXM", {"attention": "nsa", "speculation": "eagle3", "verify_kernel": "ssv"}),
    ("Llama-3.1-8B", "H100-PCIe", {"attention": "nsa", "speculation": "eagle3", "verify_kernel": "per_query"}),
    ("Llama-2-7B", "RTX-4090", {"attention": "specattn", "speculation": "draft_model"}),
    ("DeepSeek-V3", "H200", {"speculation": {"mtp": {"k": 3}}}),
]


@pytest.mark.parametrize("model,hw,axes", CASES, ids=[f"{m}-{'+'.join(map(str, a.values()))}" for m, _, a in CASES])
def test_monotone_in_context_and_batch(model, hw, axes):
    tp = 8 if model.startswith("DeepSeek") else 1
    c = make_combo(hw=hw, model=model, tp=tp, ep=8 if model == "DeepSeek-V3.2-Exp" else 1)
    for axis, value in axes.items():
        [s] = parse_axis(axis, [value])
        c = replace(c, **{axis: s})
    assert combo_refusal(c) is None
    ctx = np.array([2048, 3000, 4096, 6000, 8192, 12288, 16384, 32768, 49152, 65536, 131072], float)
    ctx = ctx[ctx <= c.model.max_context]
    for batch in (1, 16):
        cols, _ = price_combo(c, np.full(len(ctx), batch), ctx, np.full(len(ctx), 64.0))
        step = cols["step_ms"]
        assert np.all(np.isfinite(step)) and np.all(step > 0)
        assert np.all(np.diff(step) >= -1e-9 * step[:-1]), step
        assert np.all(np.diff(cols["max_batch"]) <= 0)
    b = np.array([1, 2, 4, 8, 16, 32, 64], float)
    cols, _ = price_combo(c, b, np.full(7, min(32768.0, c.model.max_context)), np.full(7, 64.0))
    assert np.all(np.diff(cols["step_ms"]) >= -1e-9 * cols["step_ms"][:-1])
