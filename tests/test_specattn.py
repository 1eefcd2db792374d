"""attention: specattn — mask generation, FlashInfer's host-side plan(), the DTW layer map and kept fraction
from a trace, refusals, the (k, alpha) surface and the reproduction."""
from dataclasses import replace

import numpy as np
import pytest

from simulator.acceptance import chain_tokens_per_round
from simulator.planner import combo_refusal
from simulator.pricing import decode_ops, price_combo
from simulator.strategies.base import parse_axis
from simulator.strategies.specattn import reduction_for, trace_layer_map
from simulator.traces.stats import TraceStats
from tests.conftest import make_combo


def _c(att, spec={"draft_model": {"k": 4}}, hw="RTX-4090", trace=None):
    c = make_combo(hw=hw, model="Llama-2-7B", kv_dtype="fp16", launch="eager")
    return replace(c, attention=parse_axis("attention", [att])[0], speculation=parse_axis("speculation", [spec])[0],
                   trace=trace)


def _trace(kl, kept=None):
    values = {"specattn.kl": np.asarray(kl, dtype=float)}
    coords = {}
    if kept is not None:
        values["specattn.kept_fraction"] = np.asarray(kept, dtype=float)
        coords["p"] = (0.97,)
    return TraceStats(name="synthetic-pair", file="synthetic.npz", source="synthetic",
                      meta={"model": {"name": "toy", "layers": np.asarray(kl).shape[1]}}, values=values,
                      coords=coords, digest="0" * 64)


def test_table1_interpolation():
    assert reduction_for(0.97) == pytest.approx(0.688)
    assert reduction_for(0.96) == pytest.approx((0.784 + 0.688) / 2)


def test_mask_generation_and_flashinfer_plan_ops():
    c = _c({"specattn": {"kv_reduction": 0.75}})
    ops, _ = decode_ops(c, np.array([1.0]), np.array([2048.0]))
    df = ops.to_frame().set_index("name")
    topp = df.loc["specattn.topp_search"]
    # gamma = 4 rows of L = 2048 fp32 read once, 10 iterations x 3 flops per element, 30 sparse layers
    assert topp.bytes_read == 4 * 2048 * 4 and topp.flops == 4 * 2048 * 10 * 3 and topp["count"] == 30
    assert df.loc["specattn.draft_weights"]["count"] == 4 * 22   # no trace: every TinyLlama layer (upper bound)
    # FlashInfer plan() per sparse layer: 2 kernels (indices.max, torch.full), 2 H2D and 2 D2H copies
    for op in ("specattn.plan_kernels", "specattn.plan_h2d", "specattn.plan_d2h"):
        assert df.loc[op]["count"] == 2 * 30
    sparse, full = df.loc["sparse_attention"], df.loc["attention"]
    assert sparse["count"] == 30 and full["count"] == 2
    assert sparse.bytes_read < 0.3 * full.bytes_read


def test_plan_ops_cost_at_least_the_host_launch():
    c = _c({"specattn": {"kv_reduction": 0.7189}})
    _, bd = price_combo(c, [1], [2048], [1843], breakdown=True)
    plan = bd[bd.op.str.startswith("specattn.plan_")]
    # 180 host-issued ops per round, each at least one eager launch (10.8 us, the H100 host's measured cost)
    assert plan.launches.sum() == 180
    assert plan.time_ms.sum() >= 180 * c.hardware.launch_eager_s * 1e3 * 0.999


def test_dtw_layer_map_from_a_trace():
    # 3 draft layers, 6 target layers; KL smallest on the staircase 0,0,1,1,2,2 -> distinct layers beyond the
    # dense share (2 of 32 layers -> round(2/32 x 6) = 0 trace layers skipped): 3 of 3 draft layers
    pref = [0, 0, 1, 1, 2, 2]
    kl = np.full((3, 6), 2.0)
    for j, i in enumerate(pref):
        kl[i, j] = 0.1
    ts = _trace(kl)
    assert trace_layer_map(ts).tolist() == pref
    c = _c("specattn", trace=ts)
    assert c.attention.mapped_layers(c) == 22          # 3 of 3 used -> all 22 TinyLlama layers
    # a map that uses only the first draft layer: 1 of 3 -> round(22 / 3) = 7 materialized layers
    kl2 = np.full((3, 6), 2.0)
    kl2[0, :] = 0.1
    c2 = _c("specattn", trace=_trace(kl2))
    assert c2.attention.mapped_layers(c2) == 7
    ops, _ = decode_ops(c2, np.array([1.0]), np.array([2048.0]))
    assert ops.to_frame().set_index("name").loc["specattn.draft_weights"]["count"] == 4 * 7
    assert _c({"specattn": {"mapped_draft_layers": 5}}, trace=_trace(kl2)).attention.mapped_layers(c2) == 5


def test_kept_fraction_from_a_trace():
    kl = np.zeros((2, 4))
    ts = _trace(kl, kept=[[0.2, 0.3, 0.3, 0.4]])
    c = _c({"specattn": {"p": 0.97}}, trace=ts)
    assert c.attention.keep(c) == pytest.approx(0.3)
    assert _c({"specattn": {"p": 0.97}}).attention.keep() == pytest.approx(1 - 0.688)     # Table 1
    assert _c({"specattn": {"kv_reduction": 0.7}}, trace=ts).attention.keep(c) == pytest.approx(0.3)


def test_ordering_at_2k_and_the_reason():
    none, _ = price_combo(_c("dense", "none"), [1], [2048], [1843])
    sd, _ = price_combo(_c("dense"), [1], [2048], [1843])
    sa, bd = price_combo(_c({"specattn": {"kv_reduction": 0.7189}}), [1], [2048], [1843], breakdown=True)
    assert none["tokens_per_s"][0] < sa["tokens_per_s"][0] < sd["tokens_per_s"][0]
    mask = bd[bd.op.str.startswith("specattn.")].time_ms.sum()
    assert mask > 0.5 * (sd["step_ms"][0] - sa["step_ms"][0] + mask)   # mask generation + plan dominate the delta


def test_refusals():
    assert "needs speculation 'draft_model'" in combo_refusal(_c("specattn", "none"))
    assert "full_layers" in combo_refusal(_c({"specattn": {"full_layers": 32}}))
    assert combo_refusal(_c("specattn")) is None


def test_k_alpha_surface_and_inverse():
    from simulator.figures.specattn import ALPHA_GRID, K_GRID, Ctx
    from simulator.scenario import load_scenario

    x = Ctx(load_scenario("specattn_rtx4090"))
    S = x.surface(0)
    assert S.shape == (len(K_GRID), len(ALPHA_GRID))
    assert np.all(np.diff(S, axis=1) > 0)                  # more acceptance, more tokens/s at every k
    k = 4
    target = 0.9 * float(S[list(K_GRID).index(k), -1])      # reachable within the acceptance grid
    a = x.alpha_needed(k, target, 0)
    # at the inverse acceptance the surface gives back the target: tokens per round / round time
    assert chain_tokens_per_round(a, k) / x.round_s[k][0] == pytest.approx(target, rel=1e-6)
    assert np.isnan(x.alpha_needed(1, 1e6, 0))


def test_specattn_reproduction(tmp_path, capsys):
    from simulator.cli import main

    assert main(["run", "specattn_rtx4090", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "acceptance needed for Table 2's SD" in out and "FlashInfer plan() host ops" in out
    assert "specattn_throughput:" in out and "identity (not counted)" in out
    assert (tmp_path / "specattn_rtx4090" / "specattn_throughput_k_alpha_surface.png").is_file()


def test_reproductions_refuse_unfitting_scenarios():
    from hwmodels.errors import ScenarioError
    from simulator.figures import check_fit, reproductions
    from simulator.scenario import load_scenario

    reproductions()                     # registers every module's `needs` (check_fit alone does not import them)
    sc = load_scenario("quickstart")
    for name, need in (("specattn_throughput", "attention 'specattn'"), ("lserve_a100", "A100-80GB"),
                       ("snapstream_sn40l", "SN40L-16")):
        with pytest.raises(ScenarioError, match="does not fit scenario 'quickstart'") as e:
            check_fit(name, sc)
        assert need in str(e.value)
