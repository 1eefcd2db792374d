"""CPU tests of the serving-calibration harness parts that need no torch (lab/serving/): arrival driving
(driver.serve with a fake clock and a fake GPU step), the KV slot arena, the scheduler adapter, the workloads, and
the measurement files (write/read, composition cells, the committed H100 run).

The harness is a folder of GPU scripts run by path, not part of the package; its torch-free modules are loaded from
lab/serving/ beside the tests folder (.ci/run copies lab/ beside its copy of the tests, so the suite runs against
the installed package). The committed serving runs are package data (hwmodels.calibration.DATA_DIR / "serving").
Nothing here imports torch."""
from __future__ import annotations

import importlib
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from hwmodels import datafiles as DF
from hwmodels.calibration import DATA_DIR

SERVING = Path(__file__).resolve().parents[1] / "lab" / "serving"
DATA = DATA_DIR / "serving"
if not SERVING.is_dir():  # pragma: no cover - the harness is not part of the installed package
    raise RuntimeError(f"harness folder missing: {SERVING}")
sys.path.insert(0, str(SERVING))
driver = importlib.import_module("driver")
records = importlib.import_module("records")
sched_adapter = importlib.import_module("sched_adapter")
workloads = importlib.import_module("workloads")


def test_harness_modules_do_not_import_torch():
    assert "torch" not in sys.modules or all(
        "torch" not in (getattr(m, "__file__", "") or "") for m in (driver, records, sched_adapter, workloads))
    for name in ("driver.py", "records.py", "sched_adapter.py", "workloads.py"):
        src = (SERVING / name).read_text()
        assert "import torch" not in src, name


# ---- a fake clock and a fake GPU step ---------------------------------------------------------------------------
class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t

    def sleep(self, dt):
        self.t += max(dt, 1e-6)


class FakeTiming:
    def __init__(self, t0, t1):
        self.path, self.padded, self.t_prep_end, self.t_launch_end, self.t_end, self.gpu_s = "eager", 0, t0, t0, t1, t1 - t0


class FakeExecutor:
    """A step costs base + per_token * tokens seconds of the fake clock."""

    def __init__(self, clock, base=0.010, per_token=0.0):
        self.clock, self.base, self.per_token = clock, base, per_token
        self.steps = []

    def run(self, st):
        t0 = self.clock()
        self.clock.t += self.base + self.per_token * st.tokens
        self.steps.append(st)
        return np.zeros(st.n, dtype=np.int64), FakeTiming(t0, self.clock())

    def forget(self, rid):
        pass


def _adapter(num_blocks=256, block_size=16, budget=64):
    from simulator.engine.scheduler import SchedulerConfig

    cfg = SchedulerConfig(num_blocks=num_blocks, block_size=block_size, max_num_batched_tokens=budget, max_num_seqs=8)
    return sched_adapter.SchedAdapter(cfg, sched_adapter.SlotArena(num_blocks * block_size))


def test_one_request_alone_hand_arithmetic():
    # prompt 40 tokens (one prefill step within the 64-token budget), 3 output tokens, 10 ms per step:
    # first token at the end of step 1 (t = 10 ms), then 2 decode steps -> finish at 30 ms; TPOT = 20 / 2 = 10 ms
    clk = FakeClock()
    ex = FakeExecutor(clk)
    w = driver.Workload("one", np.array([0.0]), np.array([40]), np.array([3]))
    reqs, steps, summ = driver.serve(w, _adapter(), ex, clock=clk, sleep=clk.sleep)
    r = reqs[0]
    assert r["first_token_s"] == pytest.approx(0.010)
    assert r["finish_s"] == pytest.approx(0.030)
    st = driver.latency_stats(reqs)
    assert st["ttft_p50_s"] == pytest.approx(0.010) and st["tpot_p50_s"] == pytest.approx(0.010)
    assert [s["prefill_chunks"] for s in steps] == ["40:0", "", ""]
    assert [s["decode_ctx"] for s in steps] == ["", "41", "42"]   # KV length after the step's token is written
    assert summ["finished"] == 1 and summ["unfinished"] == 0 and summ["error"] == ""


def test_chunked_prefill_and_arrival_while_busy():
    # request 0: prompt 100 > budget 64 -> chunks 64:0 then 36:64 (first token after step 2, t = 20 ms);
    # request 1 arrives at 5 ms, during step 1: it is enqueued at the end of step 1 (10 ms) and its 10-token
    # prompt shares step 2 with request 0's second chunk (64 budget - 36 = 28 >= 10) -> its TTFT = 20 - 5 = 15 ms
    clk = FakeClock()
    ex = FakeExecutor(clk)
    w = driver.Workload("two", np.array([0.0, 0.005]), np.array([100, 10]), np.array([2, 2]))
    reqs, steps, _ = driver.serve(w, _adapter(), ex, clock=clk, sleep=clk.sleep)
    assert steps[0]["prefill_chunks"] == "64:0"
    assert steps[1]["prefill_chunks"] == "36:64 10:0"
    assert reqs[1]["enqueue_s"] == pytest.approx(0.010)
    assert reqs[0]["first_token_s"] == pytest.approx(0.020)
    assert reqs[1]["first_token_s"] - reqs[1]["arrival_s"] == pytest.approx(0.015)
    for s in steps:   # tokens of a step = decode rows + chunk tokens, never above the budget
        chunks = records.parse_chunks(s["prefill_chunks"])
        assert s["tokens"] == s["n_decode"] + sum(c for c, _ in chunks) <= 64


def test_poisson_level_every_request_finishes_once_in_order():
    clk = FakeClock()
    ex = FakeExecutor(clk, base=0.002, per_token=1e-5)
    rng = np.random.default_rng(3)
    n = 40
    arr = np.sort(rng.uniform(0, 2.0, n))
    w = driver.Workload("p", arr, rng.integers(5, 150, n), rng.integers(2, 20, n))
    reqs, steps, summ = driver.serve(w, _adapter(), ex, clock=clk, sleep=clk.sleep)
    assert summ["finished"] == n
    for r in reqs:
        assert r["enqueue_s"] >= r["arrival_s"] - 1e-12
        assert r["arrival_s"] <= r["first_token_s"] <= r["finish_s"]
    # every request produced exactly its output tokens: its decode rows are output - 1
    dec_rows = sum(s["n_decode"] for s in steps)
    assert dec_rows == int(w.output_tokens.sum()) - n
    # steps never overlap on the (fake) clock
    t = [s["t_start_s"] for s in steps]
    assert all(b >= a for a, b in zip(t, t[1:]))


def test_drain_cut_counts_unfinished():
    clk = FakeClock()
    ex = FakeExecutor(clk, base=0.5)   # 0.5 s per step: 3 requests of 10 outputs cannot finish in 1 s
    w = driver.Workload("cut", np.array([0.0, 0.1, 0.2]), np.array([10, 10, 10]), np.array([10, 10, 10]))
    reqs, _, summ = driver.serve(w, _adapter(), ex, clock=clk, sleep=clk.sleep, drain_s=1.0)
    assert summ["unfinished"] == 3 and summ["finished"] == 0
    assert all(math.isnan(r["finish_s"]) for r in reqs)


def test_slot_arena_first_fit_coalesces():
    a = sched_adapter.SlotArena(16 + 160)
    s1 = a.alloc(30)          # rounded up to 32
    s2 = a.alloc(64)
    s3 = a.alloc(64)
    assert s1 == (16, 32) and s2 == (48, 64) and s3 == (112, 64)
    assert a.alloc(1) is None  # 16 + 32 + 64 + 64 = 176: full
    a.release(*s2)
    a.release(*s1)            # coalesces with s2's range: one free run of 96 at 16
    assert a.free == [(16, 96)]
    assert a.alloc(96) == (16, 96)
    assert a.used == 160


def test_adapter_raises_when_the_arena_is_full():
    from simulator.engine.scheduler import SchedulerConfig

    cfg = SchedulerConfig(num_blocks=64, block_size=16, max_num_batched_tokens=512, max_num_seqs=8)
    ad = sched_adapter.SchedAdapter(cfg, sched_adapter.SlotArena(16 + 100))
    ad.add(0, 50, 60, 0.0)   # a slot of 112 tokens > 100 free
    with pytest.raises(sched_adapter.ArenaFull):
        ad.schedule(0.0)


def test_records_roundtrip_gzip(tmp_path):
    rows = [{"workload": "w", "step": 0, "t_start_s": np.float64(0.5), "gpu_s": math.nan, "path": "graph",
             "rows": np.int64(3), "decode_ctx": "5 6 7", "prefill_chunks": "10:0 4:20"}]
    p = records.write_csv(str(tmp_path / "x.csv.gz"), driver.STEP_COLUMNS, rows)
    back = records.read_csv(p)
    assert back[0]["t_start_s"] == 0.5 and math.isnan(back[0]["gpu_s"]) and back[0]["rows"] == 3
    assert records.parse_decode_ctx(back[0]["decode_ctx"]) == [5, 6, 7]
    assert records.parse_chunks(back[0]["prefill_chunks"]) == [(10, 0), (4, 20)]
    assert records.paths("/d", "own", "NVIDIA H100 80GB HBM3", "2026-11-22")["steps"].endswith(
        "serving_own_steps_nvidia-h100-80gb-hbm3_2026-11-22.csv.gz")


def test_workloads_are_reproducible_and_rescaled():
    a = workloads.poisson_level(5.0, 10.0, 7, 16384)
    b = workloads.poisson_level(5.0, 10.0, 7, 16384)
    assert len(a) == 50 and np.array_equal(a.arrival_s, b.arrival_s) and np.array_equal(a.input_tokens, b.input_tokens)
    assert a.arrival_s[0] == 0.0 and np.all(np.diff(a.arrival_s) >= 0)
    assert np.all(a.input_tokens + a.output_tokens <= 16384)
    z1 = workloads.azure_slice(600, 60, 1.0, 16384)
    z2 = workloads.azure_slice(600, 60, 2.0, 16384)
    assert len(z1) == len(z2) > 100
    np.testing.assert_allclose(z2.arrival_s, z1.arrival_s / 2.0)   # rate x2 = arrivals 2x denser
    short = workloads.poisson_level(5.0, 10.0, 7, 1024)             # long prompts cut to the model length
    assert np.all(short.input_tokens + short.output_tokens <= 1024) and short.meta["prompts_cut"] > 0


@pytest.mark.skipif(not DATA.is_dir(), reason="measurement folder not in this checkout")
def test_committed_h100_run_is_consistent():
    run = records.load_run(str(DATA), "own")
    c = run["config"]
    assert c["gpu"] == "NVIDIA H100 80GB HBM3" and c["scheduler"]["max_num_batched_tokens"] == 8192
    names = {w["name"] for w in c["workloads"]}
    assert {r["workload"] for r in run["requests"]} == names
    for r in run["requests"]:
        if not math.isnan(r["finish_s"]):
            assert r["arrival_s"] <= r["first_token_s"] <= r["finish_s"]
    for s in run["steps"][:5000]:
        ctx = records.parse_decode_ctx(s["decode_ctx"])
        chunks = records.parse_chunks(s["prefill_chunks"])
        assert len(ctx) == s["n_decode"] and sum(ctx) == s["decode_ctx_sum"]
        assert s["tokens"] == s["n_decode"] + sum(t for t, _ in chunks) <= 8192
        assert s["path"] in ("graph", "eager") and s["wall_s"] > 0


# ---- the separate micro-measurements (measure_parts.py) and their fit (fit_parts.py) ---------------------------
PARTS = DF.resolve(DATA / "serving_parts_nvidia-h100-80gb-hbm3_2026-11-22.csv")


@pytest.mark.skipif(not PARTS.is_file(), reason="micro-benchmark CSV not in this checkout")
def test_parts_kernel_inventory_matches_the_unfused_table():
    """One decode forward of the harness (graph path) launches 1065 device ops: per layer the 26 kernels of
    simulator/layers.py's unfused table (norms 2, fused QKV and gate/up + o_proj + down GEMMs 4, RoPE 12 + KV
    copies 2, SiLU + product 2, residual adds 2, ... = 26), cuBLAS's 2 split-K reduces at decode sizes, and
    FlashAttention-2's varlen call: 3 copies + split kernel + combine = 5 -> 33 per layer; 32 x 33 = 1056, + 9 per
    step (final norm, LM head, argmax, 4 gathers, fp32 cast, a memset)."""
    fit_parts = importlib.import_module("fit_parts")
    rows = [r for r in fit_parts.read_rows(PARTS) if r["part"] == "inventory" and r["name"] == "graph_decode_b4_c1024"]
    total = [float(r["count"]) for r in rows if r["kernel"] == "TOTAL"]
    assert total == [1065.0]
    per = {r["kernel"][:40]: float(r["count"]) for r in rows if r["kernel"] != "TOTAL"}
    splitk = sum(v for k, v in per.items() if "splitKreduce" in k)
    flash = sum(v for k, v in per.items() if "flash_fwd" in k)
    assert splitk == 64 and flash == 64                            # 2 per layer each
    assert 32 * (26 + 2 + 5) + 9 == 1065


@pytest.mark.skipif(not PARTS.is_file(), reason="micro-benchmark CSV not in this checkout")
def test_fit_parts_terms_are_physical_and_fit():
    fit_parts = importlib.import_module("fit_parts")
    res = fit_parts.fit(parts_csv=PARTS, prefill_csv=DATA_DIR / fit_parts.PREFILL_CSV.name, log=lambda s: None)
    t = res["terms"]
    assert 0.2 < t["compute"] <= 0.6          # FlashAttention-2 forward: ~340 TFLOP/s of 989 (prefill_attn CSV)
    assert 0.3 <= t["memory"] <= 1.0 and 0.5 < t["iter_us"] < 10.0 and t["cta_slots"] == 2.0
    e = res["errors"]
    assert e["fit: prefill_attn flash rows >= 4096 (compute)"]["median_ape_pct"] < 10.0
    assert e["fit: attn_decode (decode call, graph and eager split counts)"]["median_ape_pct"] < 25.0
    la = fit_parts.eager_launch_us(PARTS)
    assert la["kernels"] == 908.0 and 5.0 < la["per_kernel_us"] < 60.0 and la["reps"] == 60
