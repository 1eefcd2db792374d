"""Self-contained CUDA timing for the lab/kernels campaigns (the method of lab/measure_regimes.py v4):
calls captured back to back in a CUDA graph, a spin kernel before every timed replay so the events bracket device time
only, the median of several replays divided by the calls. On a machine without CUDA it times the eager call on the CPU
(smoke runs only: such numbers are never committed)."""
from __future__ import annotations

import math
import statistics
import time

import torch

SPIN_CYCLES_PER_US, SPIN_US = 2000, 150.0


def cuda() -> bool:
    return torch.cuda.is_available()


def spin(us: float = SPIN_US) -> None:
    if cuda() and hasattr(torch.cuda, "_sleep"):
        torch.cuda._sleep(int(us * SPIN_CYCLES_PER_US))


def _capture(fn, calls):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn(0)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, capture_error_mode="relaxed"):
        for i in range(calls):
            fn(i)
    g.replay()
    torch.cuda.synchronize()
    return g


def _replay_us(g) -> float:
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    spin()
    a.record()
    g.replay()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1000.0


def time_graph(fn, target_us: float = 300.0, reps: int = 5, max_calls: int = 200) -> dict:
    """Median device microseconds of one fn(i) call (dict: median, p20, p80, calls)."""
    fn(0)
    if not cuda():
        xs = []
        for r in range(3):
            t0 = time.perf_counter()
            fn(r)
            xs.append((time.perf_counter() - t0) * 1e6)
        return {"median": statistics.median(xs), "p20": min(xs), "p80": max(xs), "calls": 1}
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    spin()
    a.record()
    for i in range(3):
        fn(i)
    b.record()
    b.synchronize()
    est = max(a.elapsed_time(b) * 1000.0 / 3, 1.0)
    calls = int(min(max_calls, max(2, math.ceil(target_us / est))))
    g = _capture(fn, calls)
    per = max(_replay_us(g) / calls, 0.05)
    want = int(min(max_calls, max(2, math.ceil(target_us / per))))
    if want > 1.5 * calls:
        del g
        calls = want
        g = _capture(fn, calls)
    xs = sorted(_replay_us(g) / calls for _ in range(reps))
    del g
    return {"median": statistics.median(xs), "p20": xs[len(xs) // 5], "p80": xs[(4 * len(xs)) // 5], "calls": calls}


def versions() -> dict:
    v = {"torch": torch.__version__, "cuda": str(torch.version.cuda)}
    if cuda():
        v["device"] = torch.cuda.get_device_name(0)
        import subprocess
        try:
            v["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                         capture_output=True, text=True, timeout=20).stdout.split("\n")[0].strip()
        except Exception:   # noqa: BLE001 - a version string only
            v["driver"] = "?"
    else:
        v["device"], v["driver"] = "cpu (smoke)", "-"
    return v
