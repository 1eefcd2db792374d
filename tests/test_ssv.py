"""SSV: the document's f_load and |I_merged| numbers, the planner (ranking, switching, determinism), and the
shipped scenario end to end."""
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from hwmodels.errors import ScenarioError
from simulator import ssv_planner as sp
from simulator.acceptance import TreeShape, chain_tokens_per_round, tree_tokens_per_round
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
                    else tree_tokens_per_round(0.7, TreeShape(t.branch, t.depth, t.nodes)))
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


def test_scenario_runs_end_to_end(tmp_path, capsys):
    assert main(["run", "scenarios/ssv_h100_pcie.yaml", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "SSV reproduction" in out and "SSV wins from" in out and "attention share" in out
    rep = pd.read_csv(tmp_path / "ssv-h100-pcie" / "reproduction.csv")
    for q in ("naive SD+NSA / AR NSA, B=1", "SSV full / AR NSA, B=1", "grouped kernel speedup over naive, max, B=1",
              "planning gain", "verification-stage speedup", "dense SD"):
        assert rep["quantity"].str.contains(q, regex=False).any(), q
    assert rep["simulated"].notna().all()
    res = pd.read_csv(tmp_path / "ssv-h100-pcie" / "results.csv")
    assert {"nsa", "dense"} <= set(res["attention"]) and res["verify_kernel"].str.startswith("ssv").any()
