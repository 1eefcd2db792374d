"""SSV: the document's f_load and |I_merged| numbers, online adaptation (ranking, switching, determinism, no
thrashing at the profiled acceptance), group unions from a trace, and the shipped scenario end to end."""
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from hwmodels.errors import ScenarioError
from simulator import adaptation as sp
from simulator.acceptance import chain_tokens_per_round, tree_tokens_per_round
from simulator.cli import main
from simulator.strategies.base import parse_axis
from simulator.strategies.verify_kernels import f_load, merged_blocks
from tests.conftest import make_combo


def test_document_f_load_and_merged_examples():
    # f_load = 1/C + (1 - 1/C)(1 - gamma): 0.25 + 0.1875 = 0.4375 (2.29x less traffic) at gamma 0.75, C 4
    assert f_load(4, 0.75) == pytest.approx(0.4375)
    assert 1 / f_load(4, 0.75) == pytest.approx(2.2857, abs=1e-4)
    # 0.25 + 0.75 * 0.1 = 0.325 (3.08x) at gamma 0.9
    assert f_load(4, 0.9) == pytest.approx(0.325)
    assert 1 / f_load(4, 0.9) == pytest.approx(3.077, abs=1e-3)
    # |I_merged| = 16 (1 + 3 * 0.3) = 30.4 blocks vs 16 x 4 = 64: a 2.1x reduction
    assert merged_blocks(16, 4, 0.7) == pytest.approx(30.4)
    assert 64 / merged_blocks(16, 4, 0.7) == pytest.approx(2.105, abs=1e-3)
    assert f_load(1, 0.3) == 1.0 and f_load(8, 1.0) == pytest.approx(1 / 8)


def _base():
    c = make_combo(hw="H100-PCIe")
    [nsa] = parse_axis("attention", ["nsa"])
    return replace(c, attention=nsa)


def _tuples(*specs, vk="ssv", sch="refresh_reuse"):
    [v] = parse_axis("verify_kernel", [vk])
    [h] = parse_axis("schedule", [sch])
    return [{"speculation": s, "verify_kernel": v, "schedule": h} for s in parse_axis("speculation", list(specs))]


def test_offline_rank_and_refusals():
    tuples = _tuples({"eagle3": {"k": [2, 4]}}, {"eagle3": {"tree": {"branch": 3, "depth": 3, "nodes": 12}}},
                     vk={"ssv": {"group": 4}})
    r = sp.offline_rank(_base(), tuples, batch=1, regimes=(8192, 65536))
    assert sum(r.refused.values()) == 1                          # k = 2 has 3 rows < C = 4
    assert any("larger than the 3 verification rows" in k for k in r.refused)
    for reg in (8192, 65536):
        c = r.by_regime[reg]
        assert len(c) == 2
        rates = [float(x.rate(x.alpha_hat)[0]) for x in c]
        assert rates == sorted(rates, reverse=True)
        # expected tokens per round match simulator.acceptance
        for x in c:
            t = x.combo.speculation.tree_shape()
            want = (chain_tokens_per_round(0.7, x.combo.speculation.k) if t is None
                    else tree_tokens_per_round(0.7, t))
            assert float(x.exact_tokens(0.7)[0]) == pytest.approx(want)
            assert float(x.tokens(0.7)[0]) == pytest.approx(want, abs=1e-4)
    assert sp.regime_of(10000) == 16384 and sp.regime_of(200000) == 65536 and sp.regime_of(8192) == 8192


def _two_candidates():
    tuples = _tuples({"eagle3": {"k": [1, 8]}}, vk={"ssv": {"group": 2}})
    return sp.offline_rank(_base(), tuples, batch=1, regimes=(32768,)).by_regime[32768]


def test_switching_is_deterministic_with_a_seed():
    cands = _two_candidates()
    assert [c.combo.speculation.k for c in cands] == [8, 1]      # at alpha 0.7 the long chain ranks first
    low = [float(c.rate(0.05)[0]) for c in cands]
    assert low[1] > low[0]                                        # at alpha 0.05 one draft is better
    a = sp.simulate_prompt(cands, 0.05, 256, np.random.default_rng(7), eps=0.1, window=4)
    b = sp.simulate_prompt(cands, 0.05, 256, np.random.default_rng(7), eps=0.1, window=4)
    assert (a.tokens, a.time_s, a.switches, a.used) == (b.tokens, b.time_s, b.switches, b.used)
    assert a.switches >= 1 and a.used[-1] == cands[1].label
    fixed = sp.simulate_prompt(cands, 0.05, 256, np.random.default_rng(7), adaptive=False)
    assert fixed.switches == 0 and a.tokens_per_s > fixed.tokens_per_s
    # on-profile prompts never switch: alpha 1.0 accepts every draft (9 tokens per round, no deviation)
    on = sp.simulate_prompt([replace(cands[0], alpha_hat=1.0), cands[1]], 1.0, 256, np.random.default_rng(1))
    assert on.switches == 0 and on.rounds == int(np.ceil(256 / 9))
    # a given per-round sequence: the prompt turns hard after 5 rounds
    seq = [1.0] * 5 + [0.05]
    s = sp.simulate_prompt([replace(cands[0], alpha_hat=1.0), cands[1]], seq, 256, np.random.default_rng(3), window=4)
    assert s.switches >= 1
    g1 = sp.planning_gain(cands, [0.05, 0.7, 0.9], 256, seed=11)
    g2 = sp.planning_gain(cands, [0.05, 0.7, 0.9], 256, seed=11)
    assert g1 == g2 and g1.gain > 0 and g1.prompts == 3
    alphas = sp.sample_prompt_alphas(np.random.default_rng(0), 5, 0.5, 0.9)
    assert np.array_equal(alphas, sp.sample_prompt_alphas(np.random.default_rng(0), 5, 0.5, 0.9))
    assert ((alphas >= 0.5) & (alphas <= 0.9)).all()
    with pytest.raises(ScenarioError):
        sp.simulate_prompt(cands, 1.5, 256, np.random.default_rng(0))
    with pytest.raises(ScenarioError):
        sp.simulate_prompt([], 0.5, 256, np.random.default_rng(0))


def test_estimator_does_not_thrash_at_the_profiled_acceptance():
    """The former estimator (tau(alpha) inverted from the mean of 8 rounds) switched 118 times over 16 prompts
    at alpha = alpha_hat and lost 5.5 %; the likelihood pooled over the prompt's rounds stays put."""
    tuples = _tuples({"eagle3": {"tree": {"branch": 3, "depth": 3, "nodes": 12}}}, {"eagle3": {"k": [2, 6]}},
                     vk={"ssv": {"group": 2}})
    cands = sp.offline_rank(_base(), tuples, batch=1, regimes=(65536,)).by_regime[65536]
    on = sp.planning_gain(cands, np.full(16, 0.7), 256, seed=3)
    assert on.switches <= 16 and on.gain > -0.03
    # the MLE of a chain's lengths: P(L = j) = a^j (1 - a), j < K; 0.6 is the grid point nearest the closed form
    chain = next(c for c in cands if c.combo.speculation.tree_shape() is None and c.combo.speculation.k == 6)
    lengths = [0, 1, 2, 6, 3, 1]         # 13 accepted of 13 + 5 trials (five rejections, one full chain)
    assert chain.estimate_alpha(lengths) == pytest.approx(13 / 18, abs=0.003)
    # the vectorized fixed run draws what the round-by-round simulation draws
    one = sp.simulate_prompt(cands[:1], 0.7, 256, np.random.default_rng(5), adaptive=False)
    tok, rounds = sp.fixed_prompts(cands[0], np.array([0.7]), 256, 5)
    assert (one.tokens, one.rounds) == (tok[0], rounds[0])


def _union_trace(ratio4: float):
    from simulator.traces.stats import TraceStats

    layers = 4
    vals = {"ssv.union_ratio": np.full((3, 3, layers), ratio4), "ssv.gamma_eff": np.full((3, 3, layers), 0.5)}
    return TraceStats(name="unit", file="<memory>", source="synthetic", meta={"model": {"layers": layers}},
                      values=vals, coords={"order": ("bfs", "dfs", "position_sorted"), "C": (2, 4, 8)},
                      digest="0" * 64)


def test_group_unions_come_from_the_trace():
    c = replace(_base(), speculation=parse_axis("speculation", ["eagle3"])[0],
                verify_kernel=parse_axis("verify_kernel", [{"ssv": {"group": 4}}])[0])
    R, T = np.array([5.0]), np.array([65536.0])
    base = c.attention.loads(c, R, T)
    # 5 rows = a group of 4 + a group of 1: formula 16 (1 + 3 x 0.3) = 30.4 blocks + 16
    assert float(base.sel_tokens[0]) == pytest.approx((30.4 + 16) * 64)
    traced = replace(c, trace=_union_trace(2.5))
    ld = traced.attention.loads(traced, R, T)
    # the trace's |I_merged| / n = 2.5 at C = 4 replaces the formula: 2.5 x 16 = 40 blocks, + 16 for the single row
    assert float(ld.sel_tokens[0]) == pytest.approx((40 + 16) * 64)
    assert "trace unit" in traced.verify_kernel.input_source(traced)
    assert "assumed" in c.verify_kernel.input_source(c)
    # a larger union costs more selected-KV bytes and time (and its extra split-KV partials in the merge);
    # nothing else changes
    from simulator.pricing import price_combo
    a = price_combo(c, [1], [65536], [256], breakdown=True)[1]
    b = price_combo(traced, [1], [65536], [256], breakdown=True)[1]
    diff = b.set_index("op").time_ms - a.set_index("op").time_ms
    assert diff["nsa.select"] > 0 and set(diff[diff.abs() > 1e-12].index) == {"nsa.select", "nsa.merge"}


def test_scenario_runs_end_to_end(tmp_path, capsys):
    assert main(["run", "ssv_h100_pcie", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "SSV reproduction" in out and "SSV wins from" in out and "attention share" in out
    assert "ssv: " in out and " within / " in out and "not reproducible" in out          # the count line
    assert "3.49/2.4 = 1.454" in out                                                       # computed, not typed
    rep = pd.read_csv(tmp_path / "ssv-h100-pcie" / "reproduction.csv")
    for q in ("naive SD+NSA / AR NSA", "SSV full / AR NSA", "grouped kernel speedup over naive, max",
              "planning gain", "verification-stage speedup", "dense SD"):
        assert rep["quantity"].str.contains(q, regex=False).any(), q
    assert set(rep["kind"]) >= {"reproduction", "identity", "prediction", "not_reproducible"}
    assert rep.loc[rep.kind == "identity", "within"].isna().all()                          # not counted
    assert set(rep["class"]) >= {"within", "missed", "not reproducible", "identity"}
    share = rep[rep.quantity.str.startswith("attention share")].iloc[0]
    assert "the scenario's runtime" in share.quantity and "HF repeat_kv" in share.alternatives
    assert rep["sensitivity"].fillna("").str.contains("sibling decay").any()
    assert rep["alternatives"].fillna("").str.contains("B=4").any()
    assert list((tmp_path / "ssv-h100-pcie").glob("ssv_*.png"))
    res = pd.read_csv(tmp_path / "ssv-h100-pcie" / "results.csv")
    assert {"nsa", "dense"} <= set(res["attention"]) and res["verify_kernel"].str.startswith("ssv").any()


def test_traced_scenario_changes_only_the_group_unions():
    """ssv_traced = the SSV setting + a recorded trace: the grouped kernel's exact-mode unions come from the trace
    (selected-KV bytes change); per_query, approx mode and every non-selection op do not."""
    from simulator.figures import common as C
    from simulator.pricing import price_combo
    from simulator.scenario import load_scenario

    plain, traced = load_scenario("ssv_h100_pcie"), load_scenario("ssv_traced")
    nsa = C.scenario_value(plain, "attention", "nsa")
    for vk, changes in (("ssv", True), ({"ssv": {"mode": "approx"}}, False), ("per_query", False)):
        a, b = (price_combo(C.combo(sc, attention=nsa, speculation="eagle3", verify_kernel=vk), [1], [65536], [256],
                            breakdown=True)[1].set_index("op").time_ms for sc in (plain, traced))
        d = (b - a).abs()
        assert set(d[d > 1e-12].index) == ({"nsa.select", "nsa.merge"} if changes else set()), vk
