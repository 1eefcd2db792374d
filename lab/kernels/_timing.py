"""CUDA timing for the lab/kernels campaigns: the shared harness's CUDA-graph timer (lab/harness.py `time_graph`: calls
captured back to back in a CUDA graph, a spin kernel before every timed replay so the events bracket device time only,
the median of several replays divided by the calls), with these campaigns' defaults and relaxed graph capture. On a
machine without CUDA it times the eager call on the CPU (smoke runs only: such numbers are never committed)."""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # lab/, for the shared harness
import harness  # noqa: E402

SPIN_CYCLES_PER_US, SPIN_US = harness.SPIN_CYCLES_PER_US, harness.SPIN_US
_ENVS: dict = {}


def cuda() -> bool:
    return torch.cuda.is_available()


def spin(us: float = SPIN_US) -> None:
    harness.spin(cuda(), us)


def _env() -> harness.Env:
    """The harness Env of the current device (one per device and process)."""
    dev = f"cuda:{torch.cuda.current_device()}" if cuda() else "cpu"
    if dev not in _ENVS:
        _ENVS[dev] = harness.Env(dev, smoke=not cuda())
    return _ENVS[dev]


def time_graph(fn, target_us: float = 300.0, reps: int = 5, max_calls: int = 200) -> dict:
    """Median device microseconds of one fn(i) call (dict: median, p20, p80, reps, calls), captured with
    capture_error_mode "relaxed" (the campaigns' own kernels touch the legacy stream while captured)."""
    return harness.time_graph(_env(), fn, target_us=target_us, reps=reps, max_calls=max_calls, error_mode="relaxed")


def profiled_kernels(fn, calls: int) -> list:
    """The CUDA kernel events (torch.profiler's chrome trace: name, ts, dur in us) of `calls` eager fn(j) calls after
    one untimed fn(0), in start order."""
    import json
    import tempfile

    from torch.profiler import ProfilerActivity, profile
    fn(0)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for j in range(calls):
            fn(j)
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as tf:
        prof.export_chrome_trace(tf.name)
        ev = [e for e in json.load(open(tf.name)).get("traceEvents", []) if e.get("cat") == "kernel"]
    return sorted(ev, key=lambda e: float(e["ts"]))


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


def replay_max_over_ranks(g, calls: int, reps: int) -> list:
    """Per-call device microseconds of `reps` replays (one more first, discarded) of a captured CUDA graph `g` of
    `calls` back-to-back calls, each replay behind a torch.distributed barrier and a spin kernel, bracketed by CUDA
    events; the max over the ranks (the all-reduce campaigns: lab/kernels/measure_allreduce.py,
    measure_engine_allreduce.py)."""
    import torch.distributed as dist

    xs = []
    for rep in range(reps + 1):
        dist.barrier()
        torch.cuda.synchronize()
        spin(300.0)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        t = torch.tensor([a.elapsed_time(b) * 1000.0 / calls], device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        if rep:
            xs.append(float(t.item()))
    return xs
