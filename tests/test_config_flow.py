"""Configuration flows one way (docs/DESIGN.md, "Configuration flow"): the scenario document is read in one place,
parsed once into a Scenario, and the `serving:` / `plan:` parsers build their replicas from that Scenario through
the one Combo factory; the refusal rules live beside the Combo."""
from __future__ import annotations

from pathlib import Path

import pytest

from hwmodels.errors import ScenarioError

DOC = {
    "name": "flow", "hardware": ["H200", "H100-SXM"], "model": ["Llama-3.1-8B", "Llama-3-8B"],
    "workload": {"batch": [1, 4], "context": [8192], "output_tokens": 128},
    "strategies": {"attention": [{"dense": {"kernel": ["fa2", "fa3"]}}], "kv_dtype": ["fp8", "bf16"],
                   "weight_dtype": ["native"], "parallelism": [{"tp": [2, 1]}]},
    "runtime": {"launch": "eager", "kernels": "unfused"},
    "serving": {"requests": {"poisson": {"rate": 1.0, "count": 4}, "input_tokens": {"fixed": 64},
                             "output_tokens": {"fixed": 8}},
                "replicas": [{"count": 1}, {"count": 1, "model": "Llama-3.1-8B",
                                            "strategies": {"kv_dtype": "bf16"}, "parallelism": {"tp": 1}}]},
}


def key(c) -> tuple:
    """What a Combo is made of, by value (strategy instances compare by identity)."""
    return (c.hardware.name, c.model.name, c.kv_dtype, c.weight_dtype, c.tp, c.ep, c.attn_dp, c.launch, c.kernels,
            c.trace, tuple(s.label() for s in c.strategies()))


@pytest.fixture(scope="module")
def sc():
    from simulator.scenario import scenario_from_dict

    return scenario_from_dict(DOC, "flow.yaml")


def test_replica_defaults_are_the_parsed_scenario_objects(sc):
    """A replica group reads its defaults from the parsed Scenario (the same spec and strategy objects), not from
    a second parse of the document."""
    g0, g1 = sc.serving.groups
    c = g0.combo
    assert c.hardware is sc.hardware[0] and c.model is sc.models[0]
    assert all(getattr(c, a) is sc.axes[a][0] for a in sc.axes)
    assert (c.kv_dtype, c.weight_dtype, c.tp, c.launch, c.kernels) == ("fp8", "bf16", 1, "eager", "unfused")
    assert g1.combo.kv_dtype == "bf16" and g1.combo.hardware is sc.hardware[0]


def test_one_combo_factory(sc):
    """Scenario.combo, make_combo and the sweep's enumeration build equal Combos."""
    from simulator import planner
    from simulator.combo import make_combo

    first = next(planner.combos(sc))
    assert sc.combo() == first
    assert key(sc.combo()) == key(make_combo("H200", "Llama-3.1-8B", kv_dtype="fp8", weight_dtype="native", tp=1,
                                             launch="eager", kernels="unfused", attention={"dense": {"kernel": "fa2"}}))
    assert sc.combo(model="Llama-3-8B").model.name == "Llama-3-8B"
    with pytest.raises(ValueError, match="colour"):
        sc.combo(colour=1)


def test_refusal_rules_live_beside_the_combo(sc):
    from simulator import combo, planner

    assert planner.combo_refusal is combo.combo_refusal        # kept reachable at their former home
    assert planner.onchip_overflow is combo.onchip_overflow
    assert "heads do not split evenly" in combo.combo_refusal(sc.combo(tp=3))


def test_mapping_and_scenario_give_the_same_serving_config(sc):
    """A library caller may hand the serving parser a mapping (scenario_setup reads it with the same field
    parsers); the replicas equal those parsed from the whole scenario."""
    from simulator.engine.config import parse_serving_section

    cfg = parse_serving_section(DOC["serving"], "flow.yaml", Path("."), DOC)
    assert [g.label for g in cfg.groups] == [g.label for g in sc.serving.groups]
    assert [key(g.combo) for g in cfg.groups] == [key(g.combo) for g in sc.serving.groups]


def test_plan_template_is_built_not_reparsed():
    """The plan's engine template is a ServingConfig built from the parsed Scenario (one dense TP1 replica on the
    first hardware and model, no trace), with the plan's field names in its errors."""
    from simulator.scenario import scenario_from_dict

    doc = {k: v for k, v in DOC.items() if k != "serving"}
    doc["plan"] = {"workload": {"poisson": {"rate": 4.0, "count": 20}, "input_tokens": {"fixed": 100},
                                "output_tokens": {"fixed": 10}}, "slo": {"ttft_p90_ms": 1000},
                   "engine": {"scheduler": {"max_num_seqs": 64}}}
    sc = scenario_from_dict(doc, "plan.yaml")
    tmpl = sc.plan.serving
    [g] = tmpl.groups
    assert g.combo.hardware is sc.hardware[0] and g.combo.model is sc.models[0]
    assert (g.combo.tp, g.combo.kv_dtype, g.combo.attention.label(), g.combo.trace) == (1, "bf16", "dense", None)
    assert tmpl.scheduler["max_num_seqs"] == 64 and tmpl.source.count == 20
    doc["plan"]["engine"] = {"router": "nearest"}
    with pytest.raises(ScenarioError, match="plan.engine.router"):
        scenario_from_dict(doc, "plan.yaml")


def test_the_raw_document_is_read_in_one_place(monkeypatch):
    """load_scenario reads the file through read_scenario_doc only: a change there reaches the parsed Scenario
    (the place a command-line override of the document hooks in)."""
    from simulator import scenario as S

    seen = []

    def read(path, overrides=None):
        doc = S.load_yaml(path, "scenario file")
        doc["workload"]["batch"] = [3]
        seen.append(path)
        return doc

    monkeypatch.setattr(S, "read_scenario_doc", read)
    sc = S.load_scenario("quickstart")
    assert seen and sc.batch == [3]
