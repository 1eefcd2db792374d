"""`sparsesim simulate` on the shipped serving scenarios: summary printed, tables and plots written."""
import pandas as pd
import pytest

from simulator.cli import main
from simulator.scenario import load_scenario
from simulator.shipped import shipped_scenarios

SERVING = sorted(n for n in shipped_scenarios() if n.startswith("serving_"))


def test_serving_scenarios_are_shipped():
    assert {"serving_mooncake_h100", "serving_poisson_h200"} <= set(SERVING)


@pytest.mark.parametrize("name", SERVING)
def test_shipped_serving_scenarios_parse(name):
    sc = load_scenario(name)
    assert sc.serving is not None and sc.serving.n_replicas >= 1


def test_simulate_writes_tables_and_plots(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # shipped names resolve from any folder
    rc = main(["simulate", "serving_mooncake_h100", "--requests", "150", "--out", str(tmp_path / "o"), "--seed", "1"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "throughput (req/s)" in out and "TTFT ms" in out and "4 x mixed:H100-SXM" in out
    d = tmp_path / "o" / "serving_mooncake_h100"
    df = pd.read_csv(d / "requests.csv")
    assert len(df) == 150 and df.e2e_s.notna().all()
    assert pd.read_parquet(d / "requests.parquet").equals(pd.read_parquet(d / "requests.parquet"))
    assert len(pd.read_parquet(d / "timeseries.parquet")) > 0
    for f in ("latency_cdf.png", "timeline.png", "summary.csv"):
        assert (d / f).stat().st_size > 1000


def test_rate_scale_compresses_arrivals():
    from simulator.engine.api import load_source

    cfg = load_scenario("serving_mooncake_h100").serving
    a = load_source(cfg.source, 0, requests=50)
    b = load_source(cfg.source, 0, requests=50, rate_scale=4.0)
    assert len(b) == 50 and b.arrival_s[-1] - b.arrival_s[0] == pytest.approx((a.arrival_s[-1] - a.arrival_s[0]) / 4)
