"""The host-speed probe's readers and the launch-by-attention-shape rule: /proc parsers and gc timing of
lab/serving/host_speed_probe.py, the statistics of lab/serving/host_speed_analysis.py on the committed measurements,
and the engine's launch for a step whose attention shape (Q, K) ran before (LaunchModel.seen_s, HostTime.shapes,
fit_host_terms' seen_qk split). Torch-free."""
from __future__ import annotations

import importlib
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from hwmodels.calibration import DATA_DIR
from simulator.engine.runtime import LaunchModel, ProfileError, _launch, fit_host_terms
from simulator.engine.step_cost import Composition, HostTime

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lab" / "serving"))
probe = importlib.import_module("host_speed_probe")
analysis = importlib.import_module("host_speed_analysis")
DATA = DATA_DIR / "serving"

STAT = """cpu  100 5 50 1000 10 1 2 7 0 0
cpu0 60 5 30 500 5 1 1 3 0 0
cpu1 40 0 20 500 5 0 1 4 0 0
intr 12345
"""


def test_proc_readers_parse_their_files():
    a = probe.read_proc_stat(STAT)
    assert a["cpu"] == [100, 5, 50, 1000, 10, 1, 2, 7] and set(a) == {"cpu", "cpu0", "cpu1"}
    b = probe.read_proc_stat(STAT.replace("cpu0 60 5 30 500 5 1 1 3", "cpu0 70 5 30 540 5 1 1 13"))
    sh = probe.stat_shares(a["cpu0"], b["cpu0"])      # 10 user, 40 idle, 10 steal of 60 jiffies
    assert sh["user"] == pytest.approx(10 / 60) and sh["idle"] == pytest.approx(40 / 60)
    assert sh["steal"] == pytest.approx(10 / 60) and sh["system"] == 0.0
    assert math.isnan(probe.stat_shares(a["cpu1"], a["cpu1"])["steal"])
    # the thread name may hold spaces and parentheses: field 39 is counted after the last ')'
    stat = "4242 (pt (main) x) R " + " ".join(str(i) for i in range(4, 39)) + " 7 0 0"
    assert probe.thread_cpu(stat) == 7
    st = "Name:\tpython\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n"
    assert probe.ctx_switches(st) == (12, 3)
    info = "processor\t: 0\ncpu MHz\t\t: 2100.000\n\nprocessor\t: 1\ncpu MHz\t\t: 3400.5\n"
    assert math.isnan(probe.cpu_mhz(10 ** 6, info))
    assert probe.cpu_mhz(10 ** 6, "processor\t: 1000000\ncpu MHz\t\t: 3400.5\n") == 3400.5


def test_gc_log_counts_collections_in_a_window():
    g = probe.GcLog()
    g("start", {"generation": 0})
    g("stop", {"generation": 0, "collected": 5})
    t_mid = g.events[-1][0] + 1.0
    g.events.append((t_mid, 2, 0.3, 100))
    assert g.between(t_mid - 0.5, t_mid + 0.5) == (1, 0.3)
    n, s = g.between(0.0, t_mid + 1)
    assert n == 2 and s >= 0.3
    assert probe.levels([1.0, 1.05, 2.0, 2.1, 4.0]) == [0, 0, 1, 1, 2]
    assert probe.py_work(1000) == probe.py_work(1000)


def test_analysis_statistics():
    x = np.arange(20.0)
    assert analysis.spearman(x, x ** 2) == pytest.approx(1.0)
    assert analysis.spearman(x, -x) == pytest.approx(-1.0)
    w = analysis.window_medians([0.1, 0.2, 1.1, 1.4], {"v": [1.0, 3.0, 5.0, 7.0]}, 1.0)
    assert w["t"].tolist() == [0.0, 1.0] and w["v"].tolist() == [2.0, 6.0]
    m = analysis.mode_split([2.0, 2.5, 3.0, 6.0, 7.0])
    assert m["fast_share"] == pytest.approx(0.6) and m["fast_r"] == 2.5 and m["slow_r"] == 6.5


def test_committed_probe_data_say_host_speed_and_two_modes(capsys):
    res = analysis.probe_section(str(DATA))
    # the launch moved with the probes (host speed) while their ratio stayed within ~+-10 %
    assert res["c_range"] > 1.5 and res["rho_c_add"] > 0.8
    assert 4.5 < res["c_add_p10"] < res["c_add_p50"] < res["c_add_p90"] < 6.0
    assert res["c_add_p90"] / res["c_add_p10"] < 1.2 and res["gc_share"] < 0.01
    out = analysis.runs_section(str(DATA))
    modes = out["all"]
    assert modes["fast_r"] < analysis.R_SPLIT < modes["slow_r"] and modes["slow_r"] / modes["fast_r"] > 2
    # the fast mode is the steps whose attention shape ran before in the process
    assert out["seen1"]["fast_share"] > 0.9 > 0.1 > out["seen0"]["fast_share"]
    assert "aten::_cudnn_attention_forward" in capsys.readouterr().out


def _host(seen_s=0.04):
    return HostTime(launch=LaunchModel(constant_s=0.1, seen_s=seen_s), shapes=set())


def test_a_step_whose_attention_shape_ran_before_launches_faster():
    h = _host()
    step = Composition(total_tokens=1, logit_rows=1, n_decode=1, decode_ctx_sum=2049.0)
    assert h.plan_s(0.01, step) == pytest.approx(0.1)       # a new (Q, K): the new-shape launch
    assert h.plan_s(0.01, step) == pytest.approx(0.04)      # the same shape again
    nxt = Composition(total_tokens=1, logit_rows=1, n_decode=1, decode_ctx_sum=2050.0)
    assert h.plan_s(0.01, nxt) == pytest.approx(0.1)
    mixed = Composition(total_tokens=65, logit_rows=2, n_decode=1, decode_ctx_sum=100.0, chunks=((64, 0),))
    assert h.plan_s(0.01, mixed) == pytest.approx(0.1) and (65, 164) in h.shapes
    # a planned decode run: flags per step, recorded only for the steps that ran (note_shapes)
    run = h.run_s(np.full(3, 0.01), batch=1, ctx_sums=np.array([2049.0, 2050.0, 2051.0]))
    assert run.tolist() == pytest.approx([0.04, 0.04, 0.1])
    assert (1, 2051) not in h.shapes
    h.note_shapes(1, [2051.0])
    assert h.run_s(np.full(1, 0.01), batch=1, ctx_sums=np.array([2051.0]))[0] == pytest.approx(0.04)
    # without the rule (no seen_s, or no shape memory) nothing changes
    for plain in (_host(None), HostTime(launch=LaunchModel(constant_s=0.1, seen_s=0.04))):
        assert plain.plan_s(0.01, step) == plain.plan_s(0.01, step) == pytest.approx(0.1)


def test_profile_and_fit_carry_the_seen_shape_launch():
    doc = {"host_time": {"launch": {"value": {"p10_ms": 80.0, "p50_ms": 95.0, "p90_ms": 130.0,
                                              "seen_shape_p50_ms": 38.4}, "measured": {}}}}
    lm = _launch(doc, "x.yaml", [])
    assert lm.seen_s == pytest.approx(0.0384) and lm.median_s() == pytest.approx(0.095)
    doc["host_time"]["launch"]["value"]["seen_shape_p50_ms"] = "fast"
    with pytest.raises(ProfileError, match="seen_shape_p50_ms"):
        _launch(doc, "x.yaml", [])
    n = 40
    seen = np.r_[np.zeros(30), np.ones(10)]
    lau = np.where(seen == 1, 0.04, 0.1) + np.linspace(0, 0.001, n)
    frame = {"launch_s": lau, "sync_s": np.zeros(n), "n_prefill": np.zeros(n), "rows": np.ones(n), "seen_qk": seen}
    fit = fit_host_terms(frame)
    assert fit.launch.seen_s == pytest.approx(0.0408, abs=1e-3) and fit.n_launch == 30
    assert fit.launch.median_s() == pytest.approx(0.1005, abs=1e-3)
    frame.pop("seen_qk")
    assert fit_host_terms(frame).launch.seen_s is None


def test_request_launch_spread_reads_each_request_s_decode_window():
    steps = [{"prefill_chunks": "", "n_decode": 1, "sync_s": 0.0001, "launch_s": la, "t_start_s": t}
             for t, la in ((0.1, 0.04), (0.2, 0.04), (1.1, 0.12), (1.2, 0.12), (1.3, 0.04))]
    run = {"steps": steps, "rows": [{"first_token_s": 0.05, "finish_s": 0.5}, {"first_token_s": 1.0, "finish_s": 1.25},
                                    {"first_token_s": 5.0, "finish_s": 6.0}]}
    r = analysis.request_launch_spread(run)
    assert r[0] == pytest.approx(1.0) and r[1] == pytest.approx(3.0) and math.isnan(r[2])


# ---- serving.step_cost.host_warm_shapes: the engine process's shape memory at the start ------------------------------

def _hf_cb_cfg(tmp_path, warm=None, engine="hf-cb", count=3):
    from simulator.engine.config import parse_serving_section

    doc = {"hardware": ["H100-SXM"], "model": "Llama-3.1-8B",
           "strategies": {"attention": {"dense": {"gqa_expand": "repeat_kv"}}}, "runtime": {"launch": "eager", "kernels": "hf"}}
    sc = {} if warm is None else {"host_warm_shapes": warm}
    sec = {"engine": engine, "requests": {"closed_loop": {"concurrency": 1, "count": count},
                                          "input_tokens": {"fixed": 512}, "output_tokens": {"fixed": 8}},
           "replicas": [{"count": 1}], "decode_run_steps": 0, "step_cost": sc,
           "scheduler": {"max_num_batched_tokens": 8192, "max_num_seqs": 64, "block_size": 256, "num_blocks": 200,
                         "enable_prefix_caching": False, "mixed_launch": "eager"}}
    return parse_serving_section(sec, file="t.yaml", base=tmp_path, scenario=doc)


def test_warm_shapes_parse_from_a_list_and_a_step_log(tmp_path):
    import gzip

    assert _hf_cb_cfg(tmp_path).host_warm_shapes == frozenset()
    assert _hf_cb_cfg(tmp_path, [[1, 513], [1, 514]]).host_warm_shapes == {(1, 513), (1, 514)}
    log = tmp_path / "steps.csv.gz"
    with gzip.open(log, "wt") as f:
        f.write("workload,tokens,keys,launch_s\nx,512,512,0.1\nx,1,513,0.04\n")
    assert _hf_cb_cfg(tmp_path, "steps.csv.gz").host_warm_shapes == {(512, 512), (1, 513)}


@pytest.mark.parametrize("bad, msg", [
    ([[1, -2]], "entry 0"), ([[1, 2, 3]], "entry 0"), ([[True, 2]], "entry 0"), (7, "list of \\[Q, K\\] pairs"),
    ("missing.csv", "no such file"), ("cols.csv", "needs columns tokens and keys")])
def test_warm_shapes_refused_with_the_field_named(tmp_path, bad, msg):
    from hwmodels.errors import SparsesimError

    (tmp_path / "cols.csv").write_text("a,b\n1,2\n")
    with pytest.raises(SparsesimError, match=msg) as e:
        _hf_cb_cfg(tmp_path, bad)
    assert "host_warm_shapes" in str(e.value)


def test_warm_shapes_make_a_repeated_workload_fast_and_need_a_seen_level(tmp_path):
    from hwmodels.errors import SparsesimError
    from simulator.engine.api import simulate
    from simulator.traces.requests import RequestTrace

    tr = RequestTrace(name="one", source="test", arrival_s=np.zeros(1), input_tokens=np.array([512]),
                      output_tokens=np.array([8]))
    cold = simulate(_hf_cb_cfg(tmp_path, count=1), tr, seed=0).requests["tpot_s"].iloc[0]
    # the decode shapes of this request: one row at 513..519 keys (the context after each new token)
    warm_cfg = _hf_cb_cfg(tmp_path, [[1, k] for k in range(500, 530)], count=1)
    warm = simulate(warm_cfg, tr, seed=0).requests["tpot_s"].iloc[0]
    assert warm < 0.6 * cold        # seen shapes launch at the profile's seen level (38 ms vs 95 ms)
    with pytest.raises(SparsesimError, match="no seen-shape level"):
        simulate(_hf_cb_cfg(tmp_path, [[1, 513]], engine="own", count=1), tr, seed=0)
