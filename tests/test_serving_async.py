"""CPU tests of the serving harness's async scheduling (lab/serving/driver.serve_async and the scheduler adapter's
output placeholders) and its closed-loop levels, with a fake clock and a fake GPU that runs launched steps one
after the other on its own timeline. Nothing here imports torch."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

SERVING = Path(__file__).resolve().parents[1] / "lab" / "serving"
sys.path.insert(0, str(SERVING))
driver = importlib.import_module("driver")
sched_adapter = importlib.import_module("sched_adapter")


class Clock:
    def __init__(self):
        self.t = 50.0

    def __call__(self):
        return self.t

    def sleep(self, dt):
        self.t += max(dt, 1e-6)


class Timing:
    def __init__(self, path, t_prep, t_launch, t_end, gpu_s, fed=0):
        self.path, self.padded, self.t_prep_end, self.t_launch_end = path, 0, t_prep, t_launch
        self.t_end, self.gpu_s, self.gpu_gap_s, self.fed = t_end, gpu_s, float("nan"), fed


class FakeGPU:
    """launch costs `host` seconds of the host clock; the device runs launched steps in order, each `base` seconds
    (+ per_token x tokens), starting when both the host launched it and the previous step ended; wait advances the
    host clock to the step's end. run() = launch + wait (the synchronous loop). Records which requests each step
    held and, per launch, the steps still in flight (not yet waited for)."""

    def __init__(self, clock, base=0.010, host=0.0, per_token=0.0):
        self.clock, self.base, self.host, self.per_token = clock, base, host, per_token
        self.free_at = 0.0
        self.steps = []
        self.in_flight = []
        self.max_in_flight = 0
        self.launched_before_wait = 0

    def launch(self, st):
        t0 = self.clock()
        self.clock.t += self.host
        start = max(self.clock.t, self.free_at)
        end = start + self.base + self.per_token * st.tokens
        self.free_at = end
        if self.in_flight:
            self.launched_before_wait += 1
        h = {"st": st, "t0": t0, "tl": self.clock.t, "end": end, "dev": end - start}
        self.in_flight.append(h)
        self.max_in_flight = max(self.max_in_flight, len(self.in_flight))
        self.steps.append(st)
        return h

    def wait(self, h):
        self.clock.t = max(self.clock.t, h["end"])
        self.in_flight.remove(h)
        return np.zeros(h["st"].n, dtype=np.int64), Timing("eager", h["t0"], h["tl"], self.clock.t, h["dev"])

    def run(self, st):
        return self.wait(self.launch(st))

    def forget(self, rid):
        pass


def _adapter(async_=True, num_blocks=256, block_size=16, budget=64, seqs=8, arena_tokens=None):
    from simulator.engine.scheduler import SchedulerConfig

    cfg = SchedulerConfig(num_blocks=num_blocks, block_size=block_size, max_num_batched_tokens=budget,
                          max_num_seqs=seqs)
    arena = sched_adapter.SlotArena(arena_tokens or num_blocks * block_size)
    return sched_adapter.SchedAdapter(cfg, arena, async_scheduling=async_)


def _rows_per_request(gpu):
    """{rid: [num_new of each step it was scheduled in]}"""
    out = {}
    for st in gpu.steps:
        for r, k in zip(st.req_ids, st.num_new.tolist()):
            out.setdefault(r, []).append(k)
    return out


def test_one_request_hand_arithmetic_sync_vs_async():
    # prompt 10, 5 output tokens; the device takes 10 ms a step, the host 4 ms to launch one.
    # sync: every step 14 ms -> first token 14 ms, finish 14 + 4 x 14 = 70 ms.
    # async: step 1 launched 0-4 ms, on the device 4-14; step 2 (placeholder decode) launched 4-8 while step 1
    # runs, on the device 14-24; ... the device never waits: first token 14 ms, then one token every 10 ms ->
    # finish 54 ms; the request is not scheduled again once its in-flight step samples its 5th token: 5 steps.
    w = driver.Workload("one", np.array([0.0]), np.array([10]), np.array([5]))
    clk = Clock()
    g = FakeGPU(clk, base=0.010, host=0.004)
    reqs, steps, _ = driver.serve(w, _adapter(False), g, clock=clk, sleep=clk.sleep)
    assert reqs[0]["first_token_s"] == pytest.approx(0.014) and reqs[0]["finish_s"] == pytest.approx(0.070)
    clk = Clock()
    g = FakeGPU(clk, base=0.010, host=0.004)
    reqs, steps, summ = driver.serve(w, _adapter(True), g, clock=clk, sleep=clk.sleep, async_scheduling=True)
    assert reqs[0]["first_token_s"] == pytest.approx(0.014)
    assert reqs[0]["finish_s"] == pytest.approx(0.054)
    assert len(g.steps) == 5 and summ["steps"] == 5
    assert g.max_in_flight == 2 and g.launched_before_wait == 4
    assert [s["decode_ctx"] for s in steps] == ["", "11", "12", "13", "14"]
    assert set(driver.ASYNC_COLUMNS) <= set(steps[0])
    # step 2 was launched (t = 8 ms) before the wait for step 1 began: 4 ms of host work hid behind step 1
    assert steps[0]["hidden_s"] == pytest.approx(0.004)
    assert steps[1]["t_launch_end_s"] == pytest.approx(0.008)
    assert steps[1]["t_launch_end_s"] < steps[0]["t_ids_s"]


def test_async_every_request_gets_exactly_its_tokens_no_wasted_rows():
    rng = np.random.default_rng(7)
    n = 40
    arr = np.sort(rng.uniform(0, 1.0, n))
    w = driver.Workload("p", arr, rng.integers(5, 150, n), rng.integers(2, 20, n))
    clk = Clock()
    g = FakeGPU(clk, base=0.002, host=0.001, per_token=1e-5)
    ad = _adapter(True)
    reqs, steps, summ = driver.serve(w, ad, g, clock=clk, sleep=clk.sleep, async_scheduling=True)
    assert summ["finished"] == n and summ["error"] == ""
    per = _rows_per_request(g)
    for i in range(n):
        ks = per[i]
        # prompt chunks add up to the prompt, then exactly output - 1 decode rows (none wasted after the last token)
        prefill = ks[:len(ks) - (int(w.output_tokens[i]) - 1)]
        assert sum(prefill) == int(w.input_tokens[i]), i
        assert ks[len(prefill):] == [1] * (int(w.output_tokens[i]) - 1), i
    for r in reqs:
        assert r["arrival_s"] <= r["first_token_s"] <= r["finish_s"]
    assert ad.skipped > 0 and not ad.placeholders and ad.in_flight() == 0
    ad.s.check_invariants()
    assert ad.s.pool.used == 0 or ad.cfg.enable_prefix_caching
    assert ad.arena.used == 0


def test_async_hides_host_time_behind_the_device():
    # 8 requests at once, long outputs: with 3 ms of host per step and 10 ms of device, the synchronous loop
    # steps every 13 ms, the async one every 10 ms (device-bound); with 15 ms of host, every 15 ms (host-bound)
    w = driver.Workload("b", np.zeros(8), np.full(8, 20), np.full(8, 60))

    def cycle(host, async_):
        clk = Clock()
        g = FakeGPU(clk, base=0.010, host=host)
        _, steps, _ = driver.serve(w, _adapter(async_), g, clock=clk, sleep=clk.sleep, async_scheduling=async_)
        ids = [s["t_ids_s"] if async_ else s["t_start_s"] + s["wall_s"] for s in steps]
        return float(np.median(np.diff(ids)))

    assert cycle(0.003, False) == pytest.approx(0.013)
    assert cycle(0.003, True) == pytest.approx(0.010)
    assert cycle(0.015, True) == pytest.approx(0.015)


def test_async_preemption_while_in_flight_keeps_the_books():
    # a KV pool too small for every request at once: requests are preempted, some while a step holding them is
    # in flight; every request still finishes with exactly its tokens and the block / placeholder books balance
    rng = np.random.default_rng(11)
    n = 24
    w = driver.Workload("pre", np.sort(rng.uniform(0, 0.05, n)), rng.integers(20, 60, n), rng.integers(10, 40, n))
    clk = Clock()
    g = FakeGPU(clk, base=0.002, host=0.001)
    ad = _adapter(True, num_blocks=24, budget=128, seqs=16, arena_tokens=1 << 16)   # slots never the limit
    reqs, _, summ = driver.serve(w, ad, g, clock=clk, sleep=clk.sleep, async_scheduling=True)
    assert summ["finished"] == n
    assert sum(r["preemptions"] for r in reqs) > 0
    assert not ad.placeholders and ad.in_flight() == 0 and ad.arena.used == 0
    ad.s.check_invariants()
    for i, r in enumerate(ad.reqs.values()):
        assert r.out == r.output, i


def test_closed_loop_keeps_c_in_flight():
    C, n = 4, 20
    rng = np.random.default_rng(2)
    w = driver.Workload("closed_4", np.zeros(n), rng.integers(5, 50, n), rng.integers(2, 12, n), concurrency=C,
                        meta={"duration_s": 100.0})
    for async_ in (False, True):
        clk = Clock()
        g = FakeGPU(clk, base=0.005, host=0.001)
        reqs, _, summ = driver.serve(w, _adapter(async_), g, clock=clk, sleep=clk.sleep, async_scheduling=async_)
        assert summ["finished"] == n
        arr = np.asarray([r["arrival_s"] for r in reqs])
        fin = np.asarray([r["finish_s"] for r in reqs])
        assert (arr[:C] == arr[0]).all()
        for i in range(C, n):   # request i was submitted when the (i - C + 1)-th finish happened, not before
            assert arr[i] >= np.sort(fin)[i - C] - 1e-12
        for t in arr:           # never more than C in flight
            assert ((arr <= t) & (fin > t)).sum() <= C
