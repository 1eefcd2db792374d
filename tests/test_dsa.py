"""attention: dsa — indexer / top-k / sparse MLA accounting and the scaling the GVR document describes."""
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from simulator.cli import main
from simulator.planner import combo_refusal
from simulator.pricing import decode_ops, price_combo
from simulator.strategies.base import parse_axis
from tests.conftest import make_combo


def _dsa(topk="radix", model="DeepSeek-V3.2-Exp", spec="none", attention="dsa"):
    c = make_combo(hw="B200", model=model, tp=8, attention="dense", kv_dtype="fp8")
    return replace(c, attention=parse_axis("attention", [attention])[0], topk=parse_axis("topk", [topk])[0],
                   speculation=parse_axis("speculation", [spec])[0])


def _op(df, name):
    return df[df.name == name].iloc[0]


def test_indexer_and_sparse_mla_formulas():
    ops, _ = decode_ops(_dsa(), np.array([1.0]), np.array([65536.0]))
    df = ops.to_frame()
    ix = _op(df, "indexer_logits")
    # 2 R N Hi di + 3 R N Hi = 2*65536*64*128 + 3*65536*64
    assert ix.flops == 2 * 65536 * 64 * 128 + 3 * 65536 * 64
    # key cache 128 B fp8 + 4 B scale per token, once per sequence (+ q fp8 + head weights fp32: DeepGEMM asserts
    # weights.scalar_type() == kFloat)
    assert ix.bytes_read == 65536 * 132 + 64 * 128 + 64 * 4
    assert ix.bytes_written == 65536 * 4 and ix["count"] == 61 and ix["dtype"] == "fp8"
    att = _op(df, "attention")
    # absorbed MLA over k = 2048 entries, 16 heads per device (128 / TP8) padded to FlashMLA sparse decode's 64-head
    # CTAs (dsa pad_heads): 2*64*2048*(576 + 512); unpadded (pad_heads 0) the 16 heads alone
    assert att.flops == 2 * 64 * 2048 * (576 + 512)
    ops0, _ = decode_ops(_dsa(attention={"dsa": {"pad_heads": 0, "sparse_kernel": "generic"}}), np.array([1.0]),
                         np.array([65536.0]))
    assert _op(ops0.to_frame(), "attention").flops == 2 * 16 * 2048 * (576 + 512)
    assert _op(df, "topk.radix").bytes_read == 4 * 65536 * 4          # 4 sweeps


def test_scaling_table_and_topk_share_grows():
    N = np.array([16384.0, 65536.0, 131072.0])
    ops, _ = decode_ops(_dsa(), np.ones(3), N)
    df = ops.to_frame()
    by = lambda name: df[df.name == name].sort_values("setting")
    ix = by("indexer_logits").bytes_read.to_numpy()
    tk = by("topk.radix").bytes_read.to_numpy()
    sm = by("attention").bytes_read.to_numpy()
    assert ix[2] / ix[0] == pytest.approx(8.0, rel=0.01)      # indexer O(N)
    assert tk[2] / tk[0] == pytest.approx(8.0)                # top-k O(R N)
    assert sm[2] == sm[0]                                     # sparse MLA constant in N
    r, bd = price_combo(_dsa(), np.ones(3), N + 1024, np.full(3, 1024.0), breakdown=True)
    top = bd[bd.op.str.startswith("topk")].groupby("setting").time_ms.sum().to_numpy()
    share = top / r["step_ms"]
    assert share[0] < share[1] < share[2]


def test_short_context_selects_nothing():
    ops, _ = decode_ops(_dsa(attention={"dsa": {"sparse_kernel": "generic"}}), np.array([1.0]), np.array([1500.0]))
    df = ops.to_frame()
    assert not df.name.str.startswith("topk").any()
    assert _op(df, "attention").flops == 2 * 64 * 1500 * (576 + 512)   # 16 heads padded to 64 (pad_heads)
    # FlashMLA's sparse decode walks every index tile, the -1 entries past N too: k's work whatever N
    ops, _ = decode_ops(_dsa(), np.array([1.0]), np.array([1500.0]))
    att = _op(ops.to_frame(), "attention")
    assert att.kind == "attn_flashmla_sparse" and att.flops == 2 * 64 * 2048 * (576 + 512)


def test_index_topk_parameter():
    ops, _ = decode_ops(_dsa(attention={"dsa": {"index_topk": 512}}), np.array([1.0]), np.array([65536.0]))
    assert _op(ops.to_frame(), "attention").flops == 2 * 64 * 512 * (576 + 512)   # 16 heads padded to 64


def test_mtp_rows_select_topk_each():
    ops, plan = decode_ops(_dsa(spec={"mtp": {"k": 3}}), np.array([1.0]), np.array([65536.0]))
    t = _op(ops.to_frame(), "topk.radix")
    assert plan.query_rows == 4 and t.parallel_units == 4     # one CTA per verified row


def test_refusals():
    assert "DSA lightning indexer" in combo_refusal(_dsa(model="DeepSeek-V3"))
    assert "needs a top-k" in combo_refusal(_dsa(topk="none"))
    assert combo_refusal(_dsa()) is None


def test_mtp_module_runs_dsa_with_radix():
    """DeepSeek-V3.2's MTP layer is a DSA layer: its draft forward runs the indexer and a radix top-k in both arms."""
    ops, _ = decode_ops(_dsa(topk="gvr", spec={"mtp": {"k": 1}}), np.array([1.0]), np.array([65536.0]))
    names = set(ops.to_frame().name)
    assert "draft.indexer_logits" in names and "draft.topk.radix" in names
    assert not any(n.startswith("draft.topk.gvr") for n in names)


def test_gvr_scenario_end_to_end(tmp_path, capsys):
    assert main(["run", "gvr_b200", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "GVR top-k on B200" in out and "TPOT reduction 100K, MTP=3" in out
    assert "gvr_topk: " in out and "16,384 held out" in out
    rep = pd.read_csv(tmp_path / "gvr_b200" / "reproduction.csv")
    assert set(rep["kind"]) == {"reproduction", "check", "calibration", "identity", "prediction", "not_reproducible"}
    cls = rep.set_index("quantity")["class"]
    assert cls["speedup vs radix, prev-step L20-60"] == "check"                   # ratio of two counted rows
    assert cls["GVR kernel, random data, N = 16,384 (held out of the split fit)"] == "calibration"
    assert rep.set_index("quantity").loc["TPOT reduction 64K, MTP=3", "tolerance_kind"] == "relative"
    red = rep.set_index("quantity")["simulated"]
    # MTP dilutes the saving (shared, staler preIdx): 64K reductions fall with MTP depth
    assert red["TPOT reduction 64K, MTP=0"] > red["TPOT reduction 64K, MTP=1"] > red["TPOT reduction 64K, MTP=3"]
    assert (tmp_path / "gvr_b200" / "gvr_topk_kernel_vs_row_length.png").exists()


def test_gvr_figure_on_a_scenario_it_does_not_fit(tmp_path, capsys):
    """A reproduction attached to a scenario it does not fit stops with one line (exit 2), no traceback."""
    import yaml

    doc = {"name": "gvr-on-llama", "hardware": "H100-SXM", "model": "Llama-3.1-8B",
           "workload": {"batch": [1], "context": [8192], "output_tokens": 64}, "targets": ["gvr_topk"],
           "outputs": ["csv"]}
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(doc))
    assert main(["figures", "run", str(f), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "does not fit scenario 'gvr-on-llama'" in err and "DSA" in err and "Traceback" not in err


def test_traced_scenario_changes_only_the_gvr_kernel():
    """gvr_traced = gvr_b200 + a recorded trace: the GVR top-k takes the trace's shifted overlaps (so its pass counts
    and time change); the radix baseline, the indexer and sparse MLA do not depend on the trace."""
    from simulator.figures import common as C
    from simulator.scenario import load_scenario

    plain, traced = load_scenario("gvr_b200"), load_scenario("gvr_traced")
    assert plain.trace is None and traced.trace is not None
    kv = C.mean_kv([66560.0], 1024)
    t = {}
    for name, sc in (("plain", plain), ("traced", traced)):
        t[name] = {k: C.op_times(C.combo(sc, attention="dsa", topk=k), 1.0, kv) for k in ("radix", "gvr")}
    for op, v in t["plain"]["radix"].items():
        assert t["traced"]["radix"][op] == pytest.approx(v)
    g0, g1 = t["plain"]["gvr"], t["traced"]["gvr"]
    for op in ("indexer_logits", "attention", "qkv_proj" if "qkv_proj" in g0 else "indexer_q_proj"):
        assert g1[op] == pytest.approx(g0[op])
    gvr = lambda d: sum(v[0] for k, v in d.items() if k.startswith("topk.gvr"))  # noqa: E731
    assert gvr(g1) != pytest.approx(gvr(g0))
    c = C.combo(traced, attention="dsa", topk="gvr")
    assert "trace smollm2_135m_8k" in c.topk.layer_inputs(c, 61, 2048, 65536.0)[1]


def test_run_with_an_override_that_unfits_a_target_stops_before_pricing(tmp_path, capsys):
    """`run gvr_b200 --set hardware=[H100-SXM]`: the Blackwell-only target is checked before any pricing (nothing is
    written) and the one-line error says how to drop the targets; with them dropped the run prices the H100."""
    assert main(["run", "gvr_b200", "--set", "hardware=[H100-SXM]", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "needs Blackwell hardware" in err and "--set targets=[]" in err and "Traceback" not in err
    assert not list(tmp_path.rglob("results.csv"))
