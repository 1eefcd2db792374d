"""Attention/top-k traces: format round trip, set statistics by hand, the stories260K recorder, TraceStats,
the scenario section, request-trace statistics, the synthetic generator and the CLI."""
import pickle
from pathlib import Path

import numpy as np
import pytest

from hwmodels.errors import ScenarioError
from simulator.cli import main
from simulator.shipped import traces_dir
from simulator.traces.analysis import compute_stats, group_unions, load_stats, pair_intersections
from simulator.traces.format import AttentionTrace, Selection, read_trace, write_trace
from simulator.traces.recorder import traversal_orders
from simulator.traces.requests import TraceError
from simulator.traces.stats import BY_NAME, CATALOG, TraceStats, layer_map

STORIES = traces_dir() / "attention" / "stories260K_2026-11-22.npz"
MODEL = traces_dir() / "models" / "stories260K" / "stories260K.bin"


def small_trace(rows_by_step, tiers=None, k=4) -> AttentionTrace:
    """One layer, one head, steps 0..S-1 consecutive, context 20; rows_by_step[s] = sorted indices."""
    S = len(rows_by_step)
    counts = np.array([len(r) for r in rows_by_step]).reshape(S, 1, 1, 1)
    sel = Selection("topk", "token_topk", "token", 1, k, tiers, counts, np.concatenate(rows_by_step),
                    None if tiers is None else np.zeros(int(counts.sum()), np.uint8), None, {}, "t")
    meta = {"format": "sparsesim.attention-trace", "version": 1, "name": "small", "source": "recorded",
            "model": {"name": "m", "layers": 1, "heads": 1, "kv_heads": 1, "head_dim": 1, "params": 1,
                      "max_context": 20},
            "context": {"prompt_tokens": 10, "max_tokens": 20}, "steps": S,
            "made": {"date": "2026-11-22", "script": "t", "how": "t", "seed": 0}, "provenance": "t",
            "policies": {"topk": {"kind": "token_topk", "unit": "token", "block_size": 1, "k": k, "queries": 1,
                                  "tiers": tiers, "scores": False, "params": {}, "meaning": "t"}}}
    return AttentionTrace("small.npz", meta, np.full(S, 20), np.arange(S), {"topk": sel})


# ---- format ---------------------------------------------------------------------------------------------
def test_round_trip(tmp_path):
    tr = small_trace([np.array([1, 2, 3, 4]), np.array([2, 3, 4, 5]), np.array([0, 9, 15, 19])])
    p = write_trace(tmp_path / "t.npz", tr)
    back = read_trace(p)
    assert np.array_equal(back.selections["topk"].indices, tr.selections["topk"].indices)
    assert back.selections["topk"].row(2, 0, 0).tolist() == [0, 9, 15, 19]
    assert back.meta == tr.meta


def test_tiers_restrict(tmp_path):
    tr = small_trace([np.array([1, 2, 3, 4])], tiers=[2, 4])
    tr.selections["topk"].tier = np.array([1, 0, 1, 0], np.uint8)      # 2 and 4 are the best two
    back = read_trace(write_trace(tmp_path / "t.npz", tr))
    assert back.selections["topk"].restricted(2).row(0, 0, 0).tolist() == [2, 4]
    assert back.selections["topk"].row(0, 0, 0, k=4).tolist() == [1, 2, 3, 4]


def test_writer_validates(tmp_path):
    tr = small_trace([np.array([3, 2, 1, 0])])                          # unsorted
    with pytest.raises(TraceError, match="strictly increasing"):
        write_trace(tmp_path / "t.npz", tr)


# ---- set statistics by hand -------------------------------------------------------------------------------
def test_step_overlap_by_hand():
    # {1,2,3,4} -> {2,3,4,5}: raw 3/4 = 0.75; shifted: {2,3,4,5} & {1,2,3,4}+1 = 4/4 = 1.0
    # {2,3,4,5} -> {0,9,15,19}: raw 0; shifted 0. Means over the 2 pairs: raw 0.375, shifted 0.5
    ts = compute_stats(small_trace([np.array([1, 2, 3, 4]), np.array([2, 3, 4, 5]), np.array([0, 9, 15, 19])]))
    assert ts.get("topk.overlap_raw")[0, 0] == pytest.approx(0.375)
    assert ts.get("topk.overlap_shifted")[0, 0] == pytest.approx(0.5)
    assert ts.get("topk.random_overlap")[0] == pytest.approx(4 / 20)   # k / N
    assert sorted(ts.samples("topk.overlap_raw_samples", layer=0, k=4).tolist()) == [0.0, 0.75]


def test_pair_and_group_counts():
    sel = small_trace([np.array([1, 2, 3, 4]), np.array([2, 3, 4, 5]), np.array([4, 9, 15, 19])]).selections["topk"]
    assert pair_intersections(sel, [1, 2], [0, 1]).tolist() == [3, 1]      # |{2,3,4}|, |{4}|
    assert pair_intersections(sel, [1], [0], 1).tolist() == [4]            # shifted by +1
    # union of rows 0+1 = {1..5} (5), of row 2 alone = 4
    assert group_unions(sel, [0, 1, 2], [0, 0, 1], 2).tolist() == [5, 4]


def test_traversal_orders():
    # root 0; children 1, 2; 1 -> 3, 4; 2 -> 5
    parent = [-1, 0, 0, 1, 1, 2]
    o = traversal_orders(parent, np.array([0, -1, -0.5, -3, -2, -1]))
    assert o["bfs"].tolist() == [0, 1, 2, 3, 4, 5]
    assert o["dfs"].tolist() == [0, 1, 3, 4, 2, 5]
    assert o["position_sorted"].tolist() == [0, 2, 1, 5, 4, 3]          # by depth, then score descending


# ---- the llama2.c forward and the recorder ------------------------------------------------------------
def test_llama2c_matches_runc_loop():
    """The vectorized forward equals a line-by-line port of llama2.c run.c (3 tokens)."""
    from simulator.traces.llama2c import KVCache, forward_rows, load_llama2c

    m = load_llama2c(MODEL)
    assert (m.dim, m.layers, m.heads, m.kv_heads, m.vocab, m.seq_len) == (64, 5, 8, 4, 512, 512)
    assert m.params == 260032   # 264,128 floats - 2 RoPE tables of 512 x 8 / 2 = 264,128 - 4,096
    hd, kv_mul = m.head_dim, m.heads // m.kv_heads
    kc = np.zeros((m.layers, 8, m.kv_heads * hd), np.float32)
    vc = np.zeros_like(kc)

    def rms(x, w):
        return w * (x / np.sqrt(np.sum(x * x) / len(x) + 1e-5))

    def runc(token, pos):
        x = m.emb[token].copy()
        for layer in range(m.layers):
            xb = rms(x, m.rms_att[layer])
            q, k, v = m.wq[layer] @ xb, m.wk[layer] @ xb, m.wv[layer] @ xb
            for i in range(0, m.dim, 2):
                val = pos / 10000.0 ** ((i % hd) / hd)
                for vec in ([q, k] if i < m.kv_heads * hd else [q]):
                    v0, v1 = vec[i], vec[i + 1]
                    vec[i], vec[i + 1] = v0 * np.cos(val) - v1 * np.sin(val), v0 * np.sin(val) + v1 * np.cos(val)
            kc[layer, pos], vc[layer, pos] = k, v
            out = np.zeros(m.dim, np.float32)
            for h in range(m.heads):
                o = (h // kv_mul) * hd
                att = np.array([q[h * hd:(h + 1) * hd] @ kc[layer, t, o:o + hd] for t in range(pos + 1)]) / np.sqrt(hd)
                att = np.exp(att - att.max())
                att /= att.sum()
                out[h * hd:(h + 1) * hd] = sum(att[t] * vc[layer, t, o:o + hd] for t in range(pos + 1))
            x = x + m.wo[layer] @ out
            xb = rms(x, m.rms_ffn[layer])
            h1 = m.w1[layer] @ xb
            x = x + m.w2[layer] @ (h1 / (1 + np.exp(-h1)) * (m.w3[layer] @ xb))
        return m.wcls @ rms(x, m.rms_final)

    cache = KVCache(m)
    for pos, tok in enumerate([1, 461, 401]):
        lg, _, _ = forward_rows(m, cache, [tok], [-1], commit=True)
        assert np.allclose(lg[0], runc(tok, pos), atol=1e-4)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A short stories260K recording (1 sequence, 24 steps)."""
    from simulator.traces.llama2c import load_llama2c
    from simulator.traces.recorder import record_llama2c

    m = load_llama2c(MODEL, name="stories260K")
    tr = record_llama2c(m, sequences=1, prompt_tokens=128, max_tokens=152, seed=3, name="short")
    return write_trace(tmp_path_factory.mktemp("rec") / "short.npz", tr)


def test_recorder_short(recorded):
    tr = read_trace(recorded)
    assert tr.steps == 24 and tr.source == "recorded"
    assert set(tr.selections) == {"topk", "nsa", "nsa_tree", "quest", "lserve"}
    assert tr.selections["nsa_tree"].queries == 16
    ts = compute_stats(tr)
    for name in ("topk.overlap_raw", "ssv.adjacent_overlap", "ssv.gamma_eff", "lserve.interval_recall",
                 "snapkv.recall", "attn.sink_mass"):
        a = ts.get(name)
        assert np.isfinite(a).any() and np.nanmin(a) >= 0, name
    # the exact top-k captures more mass at a larger k; interval 1 keeps everything by definition
    tm = ts.get("attn.topk_mass")
    assert (np.diff(tm, axis=0) >= -1e-6).all()
    assert np.allclose(ts.select("lserve.interval_recall", interval=1), 1.0)
    assert not ts.has("spec.accept_rate")                # no draft model for stories260K


def test_same_seed_same_trace(tmp_path):
    from simulator.traces.llama2c import load_llama2c
    from simulator.traces.recorder import record_llama2c

    m = load_llama2c(MODEL)
    a = record_llama2c(m, sequences=1, prompt_tokens=120, max_tokens=126, seed=5, name="a")
    b = record_llama2c(m, sequences=1, prompt_tokens=120, max_tokens=126, seed=5, name="a")
    assert np.array_equal(a.selections["topk"].indices, b.selections["topk"].indices)


# ---- TraceStats and the scenario section --------------------------------------------------------------
def test_catalog_is_complete():
    assert len(BY_NAME) == len(CATALOG)
    for s in CATALOG:
        assert s.seed and s.meaning and s.unit, s.name


def test_shipped_stats(tmp_path):
    ts = load_stats(STORIES, write_cache=False)
    assert isinstance(ts, TraceStats) and ts.recorded
    assert pickle.loads(pickle.dumps(ts)) == ts and hash(ts) == hash(pickle.loads(pickle.dumps(ts)))
    assert len(pickle.dumps(ts)) < 1 << 20
    per = ts.per_layer("topk.overlap_shifted", 32, k=16)
    assert per.shape == (32,) and np.isfinite(per).all()
    assert ts.select("ssv.gamma_eff", order="bfs", C=4).shape == (5,)
    with pytest.raises(TraceError, match="recorded"):
        ts.select("ssv.gamma_eff", order="bfs", C=3)
    with pytest.raises(TraceError, match="has no statistic"):
        ts.get("spec.accept_rate")
    with pytest.raises(TraceError, match="unknown statistic"):
        ts.get("made.up")


def test_layer_map():
    assert layer_map(5, 5).tolist() == [0, 1, 2, 3, 4]
    assert layer_map(5, 9).tolist() == [0, 0, 1, 2, 2, 2, 3, 4, 4]    # round(j * 4 / 8): .5 rounds to even
    assert layer_map(3, 1).tolist() == [0]


def test_trace_section(tmp_path):
    from simulator.traces.scenario import parse_trace_section

    ts = parse_trace_section("stories260K_2026-11-22", "s.yaml", tmp_path, {})
    assert ts.name == "stories260K_2026-11-22"
    (tmp_path / "sub").mkdir()
    local = tmp_path / "sub" / "mine.npz"
    local.write_bytes(STORIES.read_bytes())
    assert parse_trace_section({"name": "sub/mine.npz"}, "s.yaml", tmp_path, {}).digest == ts.digest
    for bad, match in ((5, "must be a shipped trace"), ("nope", "unknown trace 'nope'"),
                       ("x/none.npz", "no such trace file"), ({"name": "a", "x": 1}, "takes only 'name'")):
        with pytest.raises(ScenarioError, match=match):
            parse_trace_section(bad, "s.yaml", tmp_path, {})


def test_scenario_with_trace():
    from simulator.scenario import scenario_from_dict

    doc = {"name": "t", "hardware": "H100-SXM", "model": "Llama-3.1-8B",
           "workload": {"batch": [1], "context": [4096], "output_tokens": 16}, "trace": "stories260K_2026-11-22"}
    sc = scenario_from_dict(doc, "s.yaml")
    assert isinstance(sc.trace, TraceStats)


# ---- published values, synthetic traces, request statistics ----------------------------------------------
def test_published_rows():
    from simulator.traces.compare import published_entries, published_rows

    assert len(published_entries()) >= 10
    rows = published_rows(load_stats(STORIES, write_cache=False))
    got = {r["statistic"]: r for r in rows}
    assert np.isfinite(got["ssv.adjacent_overlap"]["trace"])
    assert got["spec.accept_rate"]["selection"] == "not in this trace"


def test_synthetic(recorded, tmp_path):
    from simulator.traces.synth import fit_synth, side_by_side, synthesize

    src = read_trace(recorded)
    p = fit_synth(src, maxfev=60)          # the pipeline, not the fit's quality (the CLI fits with FIT_MAXFEV)
    assert len(p.gamma) == 5 and 0 <= p.share <= 1 and len(p.fit_error) == 5
    tr = synthesize(p, context=2048, steps=6, rng=np.random.default_rng(0), name="syn")
    path = write_trace(tmp_path / "syn.npz", tr)
    back = read_trace(path)
    assert back.source == "synthetic" and "synthetic" in back.meta
    assert "SYNTHETIC" in back.meta["provenance"]
    ts = compute_stats(back)
    assert ts.source == "synthetic" and np.isfinite(ts.get("topk.overlap_raw")).any()
    lines = side_by_side(src, path)
    assert lines[0].split()[-3] == "recorded" and len(lines) > 8


def test_request_stats_poisson_and_gamma():
    from simulator.traces.reqstats import request_stats
    from simulator.traces.requests import LengthDist, gamma_arrivals, poisson

    rng = np.random.default_rng(0)
    p = request_stats(poisson(10.0, 20000, LengthDist("fixed", value=100), LengthDist("fixed", value=10), rng))
    assert p["rate_per_s"] == pytest.approx(10.0, rel=0.03)
    assert p["interarrival_cv"] == pytest.approx(1.0, abs=0.03)         # exponential gaps
    assert p["dispersion_1s"] == pytest.approx(1.0, abs=0.1)            # Poisson counts: var = mean (2000 windows)
    g = request_stats(gamma_arrivals(10.0, 3.0, 20000, LengthDist("fixed", value=100), LengthDist("fixed", value=10),
                                     rng))
    assert g["interarrival_cv"] == pytest.approx(3.0, rel=0.1)
    assert g["dispersion_10s"] > 3


def test_request_prefix_reuse():
    from simulator.traces.reqstats import request_stats
    from simulator.traces.requests import RequestTrace

    # request 0 blocks [1, 2], request 1 [1, 2, 3], request 2 [4]: reused = 2 of 6 blocks
    t = RequestTrace("t", "t", np.array([0.0, 1.0, 2.0]), np.array([1024, 1536, 512]), np.array([1, 1, 1]),
                     np.array([0, 2, 5, 6]), np.array([1, 2, 1, 2, 3, 4]), 512)
    s = request_stats(t)
    assert s["prefix_block_reuse"] == pytest.approx(2 / 6)
    assert s["prefix_token_reuse"] == pytest.approx(1024 / 3072)


# ---- CLI ---------------------------------------------------------------------------------------------------
def test_cli_list_info_stats(tmp_path, capsys):
    assert main(["trace", "list"]) == 0
    out = capsys.readouterr().out
    assert "stories260K_2026-11-22" in out and "mooncake_conversation" in out
    assert main(["trace", "info", "stories260K_2026-11-22"]) == 0
    assert "stories260K" in capsys.readouterr().out
    assert main(["trace", "stats", "stories260K_2026-11-22", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "ssv.adjacent_overlap" in out and "beside the seed documents" in out
    d = tmp_path / "trace_stories260K_2026-11-22"
    assert (d / "stats.csv").is_file() and (d / "overlap.png").is_file() and (d / "ssv.png").is_file()


def test_cli_request_stats(tmp_path, capsys):
    csv = tmp_path / "r.csv"
    csv.write_text("arrival_s,input_tokens,output_tokens\n0,10,5\n0.5,20,5\n2.0,30,5\n3.0,40,5\n")
    assert main(["trace", "stats", str(csv), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "rate_per_s" in out and "interarrival_cv" in out


def test_cli_usage_errors(capsys):
    assert main(["trace", "info"]) == 2
    assert main(["trace", "synth", "--from", "stories260K_2026-11-22"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err


def test_torch_recorder_parity():
    """The GPU script's torch raw scores equal the numpy recorder's on random inputs (CPU torch)."""
    torch = pytest.importorskip("torch")
    import importlib.util

    # lab/ (the GPU scripts) sits beside tests/, in the checkout and in .ci/run's copy of the suite
    script = Path(__file__).resolve().parents[1] / "lab" / "train_and_record.py"
    spec = importlib.util.spec_from_file_location("tar", script)
    import sys

    mod = importlib.util.module_from_spec(spec)
    sys.modules["tar"] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules.pop("tar", None)
    from simulator.traces.recorder import nsa_importance, page_scores

    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, 8, 16)).astype(np.float32)        # R, H, d
    K = rng.standard_normal((2, 203, 16)).astype(np.float32)      # Hkv, T, d
    qt = torch.tensor(q).view(1, 2, 4, 16)
    a = nsa_importance(q, K, 16)
    b = mod.nsa_imp(qt, torch.tensor(K), 16).numpy()
    assert np.allclose(a, b, atol=1e-5)
    a = page_scores(q, K, 8)[0]
    b = mod.page_sc(qt, torch.tensor(K), 8).numpy()
    assert np.allclose(a, b, atol=1e-4)


def test_a_trace_of_some_layers_maps_model_layers_by_their_depth():
    """A trace recording only some of its model's layers (Gemma 3's global layers 5, 11, 17 of 18) maps a model's
    layers by those layers' depths, the same way for per-layer statistics and for per-layer samples (GVR's
    recorded pass counts read ts.layer_map)."""
    import numpy as np

    meta = {"model": {"layers": 3, "layer_ids": [5, 11, 17], "model_layers": 18}}
    ts = TraceStats(name="t", file="t.npz", source="recorded", meta=meta,
                    values={"x": np.array([1.0, 2.0, 3.0])}, coords={}, digest="0")
    by_depth = layer_map(3, 18, ts.layer_depths).tolist()
    assert ts.layer_map(18).tolist() == by_depth
    assert by_depth != layer_map(3, 18).tolist()          # plain spacing would put model layer 3 on trace layer 0
    assert by_depth[:9] == [0] * 9 and by_depth[-1] == 2


def test_trace_stats_all_runs_through_the_cli(tmp_path, capsys):
    """`sparsesim trace stats --all` (a README command): every shipped attention trace in one table and a CSV."""
    from simulator.cli import main

    assert main(["trace", "stats", "--all", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "SL2_8k" in out and "G3_32k" in out and "attn.sink_mass" in out
    assert (tmp_path / "trace_stats_all" / "stats_all.csv").is_file()
