"""FlashAttention-3's longest-first schedule of causal prefill tiles (simulator/kernels/production.py lpt_makespan,
simulator/kernels/fa3.py FA3_PREFILL_LPT) and prefill blind grid 5, which judged it."""
from __future__ import annotations

import heapq
import sys
from pathlib import Path

import numpy as np
import pytest

import simulator.kernels.production as PR
from hwmodels.spec import load_hardware
from simulator.calibration import prefill_kernels as PK
from simulator.calibration.scoreboard import models_table
from simulator.kernels.production import causal_tile_blocks, lpt_makespan


def _heap_span(B, q, T, G, rows, kt, Hkv, m):
    nt = int(np.ceil(q * G / rows))
    j = np.arange(nt, dtype=float)
    L = np.minimum(T, T - q + np.minimum(q, np.ceil((j + 1) * rows / G)))
    jobs = sorted(np.tile(np.ceil(L / kt), int(B * Hkv)), reverse=True)
    slots = [0.0] * int(m)
    for w in jobs:
        heapq.heapreplace(slots, slots[0] + w)
    return max(slots), sum(jobs) / m


@pytest.mark.parametrize("case", [(1, 640, 640, 8, 128, 128, 4, 132), (2, 512, 1512, 4, 128, 128, 8, 132),
                                  (3, 300, 300, 1, 128, 128, 8, 20), (1, 2000, 6000, 7, 128, 176, 4, 132)])
def test_the_exact_emulation_is_the_greedy_rule(case, monkeypatch):
    monkeypatch.setattr(PR, "LPT_EXACT", True)
    span, W = _heap_span(*case)
    a = [np.array([float(x)]) for x in case]
    assert PR._lpt_ratio(*a)[0] * W == pytest.approx(span, rel=1e-9)


def test_the_shipped_form_keeps_the_schedules_bounds():
    rng = np.random.default_rng(0)
    n = 400
    B, q, O = rng.integers(1, 4, n), rng.integers(128, 6000, n), rng.integers(0, 20000, n)
    G, Hkv = rng.choice([1, 4, 5, 7, 8], n), rng.choice([1, 2, 4, 8], n)
    span, W = lpt_makespan(B, q, q + O, G, 128.0, 128.0, Hkv, 132.0)
    _, longest = causal_tile_blocks(q, q + O, G, 128.0, 128.0, prefix_continuous=True)
    assert np.all(span >= np.maximum(W, longest) - 1e-9)
    assert np.all(span <= W + longest + 1e-9)          # a list schedule never exceeds W + its longest job


def test_blind_grid_5_judged_the_exact_form_and_the_shipped_one_stays_close(monkeypatch):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        from accuracy_sections import prefill_kernels as P
    except ImportError:
        pytest.skip("benchmarks/ not beside the tests")
    b = P.load("_blind5")
    if not len(b):
        pytest.skip("grid 5 not committed")
    hw = load_hardware("H200")
    assert len(b) == 53 and set(b["device"]) == {"NVIDIA H200"}
    monkeypatch.setattr(PR, "LPT_EXACT", True)
    monkeypatch.setattr(PR, "LPT_RATIO_COARSE", False)   # the form grid 5 judged: every key-tile multiple
    # the judged prices (to 2e-4: the decode refit of 2026-11-28, FI_MERGE_PATH_SM_DECODE, moved the shared merge kind's
    # per-state term 0.0546 -> 0.0568 us, which FA3's combine borrows; the grid's prices moved by <= 1.1e-4)
    assert np.allclose(PK.family_us(b, causal=True, hw=hw), b["pred_new_us"], rtol=2e-4)
    monkeypatch.setattr(PR, "LPT_EXACT", False)
    monkeypatch.setattr(PR, "LPT_RATIO_COARSE", True)
    shipped = PK.family_us(b, causal=True, hw=hw)
    assert np.max(np.abs(shipped / b["pred_new_us"] - 1)) < 0.06
    b["shipped_err_pct"] = (shipped / b["median_us"] - 1) * 100
    t = models_table(b, ("regime",), ("main", "new", "shipped"), ("main", "new", "shipped"))
    assert (t["shipped_goal"] == "met").all() and (t["new_goal"] == "met").all()
    assert np.median(b["new_err_pct"].abs()) < np.median(b["main_err_pct"].abs())
    assert np.percentile(b["new_err_pct"].abs(), 90) < np.percentile(b["main_err_pct"].abs(), 90)


def test_the_prefix_ladder_stays_with_every_key_tile(monkeypatch):
    # LPT_RATIO_COARSE (shipped): the ratio emulated on the prefix's ladder of INORDER_PREFIX_LADDER points per doubling,
    # q kept, against every key-tile multiple; launches of 1-4 rounds (the emulated ones) and long prefixes
    rng = np.random.default_rng(3)
    n = 600
    q, O = rng.integers(16, 8193, n).astype(float), rng.integers(0, 65536, n).astype(float)
    G, Hkv = rng.choice([1, 2, 4, 8], n).astype(float), rng.choice([1, 2, 4, 8], n).astype(float)
    kt = rng.choice([128.0, 176.0], n)
    assert PR.LPT_RATIO_COARSE is True
    coarse, _ = lpt_makespan(1.0, q, q + O, G, 128.0, kt, Hkv, 132.0)
    monkeypatch.setattr(PR, "LPT_RATIO_COARSE", False)
    every, _ = lpt_makespan(1.0, q, q + O, G, 128.0, kt, Hkv, 132.0)
    rounds = np.ceil(q * G / 128.0) * Hkv / 132.0
    em = (rounds > 1) & (rounds <= 4) & (O > 8 * kt)
    assert em.sum() > 50
    assert np.max(np.abs(coarse / every - 1)) < 1e-3
