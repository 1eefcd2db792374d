"""The CLI as a user runs it: default scenario, sweep with refusals, hw/models listings."""

import pandas as pd
import yaml

from simulator.cli import main


def test_run_default_quickstart(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default scenario ships with the package: any folder works
    assert main(["run", "--out", str(tmp_path), "--breakdown"]) == 0
    out = capsys.readouterr().out
    assert "Llama-3.1-8B on H100-SXM" in out and "TPOT (ms)" in out and "128K" in out and "oom" in out
    df = pd.read_csv(tmp_path / "quickstart" / "results.csv")
    assert len(df) == 7 * 6
    assert {"tpot_ms", "tokens_per_s", "ttft_ms", "kv_bytes", "max_batch", "attention_ms", "gemm_ms"} <= set(df.columns)
    assert (tmp_path / "quickstart" / "tpot_throughput.png").stat().st_size > 10_000
    bd = pd.read_csv(tmp_path / "quickstart" / "breakdown.csv")
    # the breakdown adds up to the step time of every setting
    sums = bd.groupby("setting")["time_ms"].sum().to_numpy()
    assert abs(sums - df["step_ms"].to_numpy()).max() < 1e-6


def test_sweep_counts_refusals_and_ranks(tmp_path, capsys):
    sc = {
        "name": "mini", "hardware": ["H100-SXM", "RTX-4090"], "model": ["Llama-3.1-8B", "Llama-2-7B"],
        "workload": {"batch": [1, 8], "context": [2048, 8192], "output_tokens": 128},
        "strategies": {"kv_dtype": ["bf16", "fp8"], "parallelism": [{"tp": [1, 2]}]},
        "objective": {"rank_by": "tokens_per_s", "slo": {"tpot_ms": 30}, "top": 5},
        "outputs": ["csv"],
    }
    p = tmp_path / "mini.yaml"
    p.write_text(yaml.safe_dump(sc))
    assert main(["sweep", str(p), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    # 2 hw x 2 models x 2 kv x 2 tp = 16 tuples x 4 settings = 64
    assert "16 strategy tuples x 4 workload settings = 64 settings" in out
    # RTX-4090 allows one device: its 4 TP2 tuples x 4 settings are refused with the reason
    assert "16  TP2 needs 2 devices; a RTX-4090 node has at most 1" in out
    # Llama-2-7B's 4K limit skips its 8K settings: 3 remaining tuples per hw... counted, not dropped
    assert "context beyond Llama-2-7B's limit of 4096 tokens" in out
    assert "Top 5 by tokens_per_s" in out and "Best per (hardware, model, context)" in out
    ranked = pd.read_csv(tmp_path / "mini" / "ranked.csv")
    assert (ranked["tpot_ms"] <= 30).all() and ranked["fits"].all()
    assert ranked["tokens_per_s"].is_monotonic_decreasing


def test_hw_and_models_listings(capsys):
    assert main(["hw", "list"]) == 0
    out = capsys.readouterr().out
    for n in ["H100-SXM", "H100-PCIe", "H200", "B200", "A100-80GB", "L40S", "RTX-4090", "SN40L", "SN40L-16"]:
        assert n in out
    assert main(["hw", "show", "H100-SXM"]) == 0
    out = capsys.readouterr().out
    assert "3,350 GB/s" in out and "whitepaper" in out and "from calibration" in out
    assert main(["hw", "show", "B200"]) == 0
    out = capsys.readouterr().out
    assert "[ASSUMED]" in out and "borrowed from H200" in out
    # the engines' all-reduce terms and judged rules are shown (the B200 borrows the H200's, the in-step wait included)
    assert "engines' custom all-reduce" in out and "after_gemm_share=0.0479" in out and "multi_link_time=" in out
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    for n in ["Llama-3.1-8B", "Llama-3-8B", "Llama-2-7B", "Llama-3.1-70B", "Minitron-4B", "TinyLlama-1.1B",
              "DeepSeek-V3", "DeepSeek-R1", "DeepSeek-V3.2-Exp"]:
        assert n in out
    assert main(["models", "show", "DeepSeek-V3.2-Exp"]) == 0
    out = capsys.readouterr().out
    assert "dsa_indexer" in out and "source:" in out


def test_every_shipped_scenario_loads(tmp_path, monkeypatch):
    """Every shipped scenario loads by name from any folder (sections, traces and targets resolved)."""
    from simulator.scenario import load_scenario
    from simulator.shipped import shipped_scenarios

    monkeypatch.chdir(tmp_path)
    names = shipped_scenarios()
    assert len(names) >= 10 and "quickstart" in names
    for name in names:
        assert load_scenario(name).name
