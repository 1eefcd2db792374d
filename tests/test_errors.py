"""Bad inputs give a SparsesimError naming the file and field; the CLI prints one line and exits 2."""

import pytest
import yaml

from hwmodels.errors import ScenarioError, SparsesimError, SpecError
from hwmodels.spec import load_hardware
from simulator.cli import main
from simulator.model import load_model
from simulator.scenario import scenario_from_dict

GOOD = {
    "name": "t", "hardware": "H100-SXM", "model": "Llama-3.1-8B",
    "workload": {"batch": [1], "context": [4096], "output_tokens": 16},
}


def scenario(**changes):
    doc = yaml.safe_load(yaml.safe_dump(GOOD))
    for path, value in changes.items():
        node = doc
        keys = path.split(".")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    return doc


@pytest.mark.parametrize("path,value,match", [
    ("hardware", "H900", "unknown hardware 'H900'; known: A100-80GB"),
    ("model", "Llama-9B", "unknown model 'Llama-9B'"),
    ("workload.batch", [0], "positive integers"),
    ("workload.batch", [-4], "positive integers"),
    ("workload.context", [0], "positive integers"),
    ("workload.context", [262144], "beyond every model's limit"),
    ("workload.output_tokens", [4096], "leaves no prompt"),
    ("strategies.attention", ["sparse-magic"], "unknown attention strategy 'sparse-magic'; known: dense"),
    ("strategies.attention", [{"dense": {"split_tokens": 3}}], "split_tokens=3 is invalid"),
    ("strategies.attention", [{"dense": {"block": 64}}], "no parameter"),
    ("strategies.kv_dtype", ["fp6"], "unknown value 'fp6'"),
    ("strategies.parallelism", [{"pp": 2}], "tp: N"),
    ("runtime.launch", "warp", "allowed: graph, eager"),
    ("objective.rank_by", "joy", "allowed: tokens_per_s"),
    ("objective.slo", {"tpot_ms": -1}, "positive number"),
    ("bogus", 1, "unknown top-level keys"),
])
def test_bad_scenarios(path, value, match):
    with pytest.raises(ScenarioError, match=match):
        scenario_from_dict(scenario(**{path: value}), "s.yaml")


def test_missing_sections():
    with pytest.raises(ScenarioError, match="field 'workload': is missing"):
        scenario_from_dict({"hardware": "H100-SXM", "model": "Llama-3.1-8B"}, "s.yaml")
    with pytest.raises(ScenarioError, match="must be a YAML mapping"):
        scenario_from_dict(["a"], "s.yaml")


def test_malformed_yaml_cli(tmp_path, capsys):
    p = tmp_path / "bad.yaml"
    p.write_text("hardware: [H100-SXM\nmodel: x: y\n")
    assert main(["run", str(p)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "not valid YAML" in err and "Traceback" not in err


def test_cli_unknown_names(capsys):
    assert main(["hw", "show", "H900"]) == 2
    assert "unknown hardware 'H900'" in capsys.readouterr().err
    assert main(["models", "show", "GPT-9"]) == 2
    assert "unknown model 'GPT-9'" in capsys.readouterr().err
    assert main(["run", "no/such/scenario.yaml"]) == 2
    assert "no scenario file" in capsys.readouterr().err


def test_cli_context_beyond_limit(tmp_path, capsys):
    p = tmp_path / "long.yaml"
    p.write_text(yaml.safe_dump(scenario(**{"model": "Llama-2-7B", "workload.context": [8192]})))
    assert main(["run", str(p)]) == 2
    err = capsys.readouterr().err
    assert "beyond every model's limit (Llama-2-7B 4096)" in err and "workload.context" in err


def _spec_doc():
    return yaml.safe_load(open(load_hardware("H100-SXM").file))


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d["memory"]["hbm"].pop("bandwidth_gbps"), "field 'memory.hbm.bandwidth_gbps': is missing"),
    (lambda d: d["memory"]["hbm"]["bandwidth_gbps"].update(value=-3), "positive number"),
    (lambda d: d["memory"]["hbm"]["bandwidth_gbps"].pop("source"), r"\{value: <number>, source"),
    (lambda d: d.update(architecture="pascal"), "allowed: hopper, blackwell"),
    (lambda d: d["peak_tflops"].update(tf32={"value": 1, "source": "x"}), "unknown dtype 'tf32'"),
    (lambda d: d["interconnect"].update(kind="ethernet"), "allowed: nvlink3"),
    (lambda d: d["compute_units"]["count"].update(value=None), "is null"),
])
def test_bad_hardware_spec(tmp_path, mutate, match):
    d = _spec_doc()
    mutate(d)
    p = tmp_path / "hw.yaml"
    p.write_text(yaml.safe_dump(d))
    with pytest.raises(SpecError, match=match) as e:
        load_hardware(p)
    assert "hw.yaml" in str(e.value)


def test_bad_model_spec(tmp_path):
    d = yaml.safe_load(open(load_model("Llama-3.1-8B").file))
    d["kv_heads"] = 7
    p = tmp_path / "m.yaml"
    p.write_text(yaml.safe_dump(d))
    with pytest.raises(SpecError, match="multiple of kv_heads"):
        load_model(p)
    d["kv_heads"] = 0
    p.write_text(yaml.safe_dump(d))
    with pytest.raises(SpecError, match="must be an integer from 1 to"):
        load_model(p)
    d["kv_heads"] = 8
    d["activation"] = "swish"
    p.write_text(yaml.safe_dump(d))
    with pytest.raises(SpecError, match="allowed: silu_glu"):
        load_model(p)


def test_errors_are_sparsesim_errors():
    assert issubclass(ScenarioError, SparsesimError) and issubclass(SpecError, SparsesimError)
