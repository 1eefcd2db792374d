"""Top-k algorithms: pass-model formulas, the GVR secant model and every GVR dispatch fallback."""
from dataclasses import replace

import numpy as np
import pytest

from hwmodels.spec import load_hardware
from simulator.ops import OpBuilder
from simulator.planner import combo_refusal
from simulator.strategies import topk as T
from simulator.strategies.base import parse_axis
from tests.conftest import make_combo


def _combo(topk, hw="B200", attention="dsa"):
    c = make_combo(hw=hw, model="DeepSeek-V3.2-Exp", tp=8, attention=attention, kv_dtype="fp8")
    return replace(c, topk=parse_axis("topk", [topk])[0])


def _ops(combo, rows, n, k=2048, phase="decode", layers=1):
    b = OpBuilder(len(n))
    combo.topk.add_ops(b, combo, np.asarray(rows, float), np.asarray(n, float), k, layers, phase)
    return b.build().to_frame()


def test_radix_work_formula():
    # steps = 2: 4 sweeps of N x 4 B; flops = 2N(9.4 + 4) + 2N*4 + k*6.5 + 2048*128 (histogram atomic 9.4 and
    # same-address atomic 6.5 flop-equivalents: measured, fit_topk_cta.py)
    n, k = 68665.0, 2048
    read, written, flops = T.radix_work(n, k, 2)
    assert read == 4 * n * 4
    assert written == k * 4
    assert T.HIST_ATOMIC_FLOPS == 9.4 and T.SERIAL_ATOMIC_FLOPS == 6.5
    assert flops == pytest.approx(2 * n * 13.4 + 2 * n * 4 + k * 6.5 + 2048 * 128)
    # the calibration can price the same structure with other atomic costs
    assert T.radix_work(n, k, 2, hist_flops=10.0)[2] == pytest.approx(flops + 2 * n * 0.6)
    assert T.radix_work(n, k, 2, serial_flops=256.0)[2] == pytest.approx(flops + k * 249.5)


def test_radix_split_work_path_beyond_200k():
    df = _ops(_combo("radix"), [1.0, 1.0], [150_000, 250_000])
    assert set(df[df.setting == 0].name) == {"topk.radix"}
    long = df[df.setting == 1]
    assert set(long.name) == {"topk.radix_split", "topk.radix_merge"}
    assert long[long.name == "topk.radix_split"].parallel_units.iloc[0] == 10   # 10 CTAs per row


def test_gvr_phase_bytes():
    w = T.gvr_work(65536.0, 2048, passes=1.0)
    assert w["guess"][0] == 2048 * (4 + 32)          # indices + one 32-B sector per predicted score
    assert w["verify"][0] == 65536 * 4               # one secant count sweep
    assert w["collect"][0] == 65536 * 4              # one collection sweep (counts reused)
    assert w["refine"][1] == 2048 * 4                # k indices written


def test_secant_passes_fall_with_overlap():
    n = 65536
    rand = T.secant_passes(0.0, "random", 2048, n)
    good = T.secant_passes(0.44, "previous", 2048, n)
    assert good == 1.0                # pmean of a 44 %-overlap prediction lands in [k, C] at once
    assert rand >= 3.0                # no information: several secant passes
    assert T.overlap_correlation(2048 / n, 2048, n) == 0.0    # at/below the random baseline -> no information
    assert 0.7 < T.overlap_correlation(0.44, 2048, 68665) < 0.85


def test_gvr_beats_radix_with_good_prediction_on_b200():
    r = _ops(_combo("radix"), [1.0], [68665])
    g = _ops(_combo({"gvr": {"overlap": 0.44}}), [1.0], [68665])
    assert set(g.name) == {"topk.gvr[L0-0]"}
    assert g.bytes_read.sum() < 0.6 * r.bytes_read.sum()     # 2 sweeps + gather vs 4 sweeps


@pytest.mark.parametrize("case, kw", [
    ("prefill", dict(phase="prefill")),
    ("short row", dict(n=[12287])),
    ("k != 2048", dict(k=1024)),
    ("split-work length", dict(n=[200_000])),
    ("large batch (wave bound 426)", dict(rows=[426])),
    ("large batch (L2 bound 0.9 L2 / 4N)", dict(rows=[300], n=[100_000])),   # 119,380,377 / 400,000 = 298
])
def test_gvr_dispatch_fallbacks(case, kw):
    c = _combo({"gvr": {"overlap": 0.44}})
    df = _ops(c, kw.get("rows", [1.0]), kw.get("n", [68665]), kw.get("k", 2048), kw.get("phase", "decode"))
    assert set(df.name) <= {"topk.radix", "topk.radix_split", "topk.radix_merge"}, case


def test_gvr_dispatch_takes_fast_path_at_the_edges():
    c = _combo({"gvr": {"overlap": 0.44}})
    assert c.topk.dispatch(c, [1.0], [12288], 2048, "decode")[0]          # N >= 12288
    assert c.topk.dispatch(c, [297.0], [100_000], 2048, "decode")[0]      # 297 < 298
    assert not c.topk.dispatch(c, [1.0], [68665], 2048, "prefill")[0]


def test_gvr_other_fallbacks():
    # no previous indices; architectures before Blackwell ignore the flag; GVR not enabled for k = 512
    assert not _combo({"gvr": {"preidx": "none"}}).topk.dispatch(_combo("gvr"), [1.0], [68665], 2048, "decode")[0]
    h = _combo({"gvr": {"overlap": 0.44}}, hw="H100-SXM")
    assert not h.topk.dispatch(h, [1.0], [68665], 2048, "decode")[0]
    w = _combo({"gvr": {"overlap": 0.44, "supported_topk": [512, 2048]}})
    assert w.topk.dispatch(w, [1.0], [68665], 512, "decode")[0]


def test_refusals():
    assert "selects from a score row" in combo_refusal(_combo("radix", attention="dense"))
    assert "61" in combo_refusal(_combo({"gvr": {"overlap": [[[2, 0.1], [50, 0.4]]]}}))
    assert combo_refusal(_combo("gvr")) is None
    [none] = parse_axis("topk", ["none"])
    assert "needs a top-k" in combo_refusal(replace(_combo("radix"), topk=none))


def test_torch_topk_sanity_against_h100_measurement():
    """Calibration CSV (H100, torch.topk, 1 row x 65,536, k = 2048): 79.96 us median, eager. Only a sanity
    band: the model (5 kernels + 1 sort, eager launches) must land within 3x either way."""
    c = _combo("torch_topk", hw="H100-SXM")
    from hwmodels.roofline import price
    b = OpBuilder(1)
    c.topk.add_ops(b, c, np.array([1.0]), np.array([65536.0]), 2048, 1, "decode")
    t = price(b.build(), load_hardware("H100-SXM"), "eager").sum() * 1e6
    assert 79.96 / 3 < t < 79.96 * 3
