"""The timing and output harness every GPU measurement script of lab/ shares.

The scripts run by path on a CUDA machine (`python lab/measure.py --out DIR`); Python puts the script's folder
on sys.path, so `from harness import ...` finds this file (a script in a sub-folder puts lab/ there first, see
lab/README.md). Nothing here is part of the installed package, and nothing in `simulator` or `hwmodels` imports
it. torch (and CuPy for `LaunchTimer`) is imported where it is needed, not at import time, so a script that
needs only CuPy or only the CSV helpers runs without torch.

What it holds:
  run facts      `driver_version()`, `device_slug(name)`, `utc_date()`, `library_version(name)`, and `Env`: the
                 device (name, SMs, L2, memory), the software versions and the date every CSV row repeats;
  output         `Sink`: a CSV written row by row (a killed run keeps its rows) with the script's own columns and
                 script version; `write_rows`: the whole CSV at the end, for scripts that collect rows first;
  statistics     `quantile` (linear interpolation), `stats` (median / p20 / p80 of samples);
  timers         `spin` (a GPU sleep kernel that keeps the GPU busy while the host enqueues the timed sample, so
                 CUDA events bracket device time only), `capture_graph` / `replay_us` / `time_graph` (calls captured
                 back to back in a CUDA graph and replayed), `replay_times` (replays after a sync, device and wall
                 time), `time_cold` (one eager call after an L2 flush), `Bencher` (eager calls back to back after a
                 spin, `inner` calls per sample), `LaunchTimer` (raw CuPy kernel launches, the same method with CuPy
                 events and the kernel module's own spin), `cupti_durations` (the kernels of one call and their
                 device time, from torch.profiler's CUPTI records).
Every timer returns microseconds per call.
"""
from __future__ import annotations

import csv
import datetime as _dt
import gc
import importlib
import math
import os
import re
import statistics
import subprocess
import time

MiB, GiB = 1 << 20, 1 << 30

#: cycles per microsecond of torch.cuda._sleep: it only sizes the spin kernel, so exactness does not matter (the
#: H100 / H200 SM clock is 1.6-2.0 GHz under load)
SPIN_CYCLES_PER_US = 2000
#: the spin before a timed graph replay: much longer than the host's cudaGraphLaunch + event record (~5-20 us on the
#: machines the committed data was measured on)
SPIN_US = 150.0
#: the L2 size assumed when torch does not report it (the H100's 50 MiB), and the nominal one of the CPU debug path
L2_FALLBACK_BYTES = 50 * MiB
L2_CPU_BYTES = 4 * MiB


# ----------------------------------------------------------------------------------------------------------------
# run facts
# ----------------------------------------------------------------------------------------------------------------
def driver_version(timeout: float = 30) -> str:
    """The NVIDIA driver version as `nvidia-smi --query-gpu=driver_version` reports it (a read-only query), '' when
    it cannot be read (informational only)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=timeout).stdout
        return out.strip().splitlines()[0].strip() if out.strip() else ""
    except Exception:  # noqa: BLE001 - informational
        return ""


def device_slug(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3': the device part of every output file name."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def utc_date() -> str:
    """Today in UTC, YYYY-MM-DD (the `date` column and the date in output file names)."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d")


def library_version(name: str) -> str:
    """`name.__version__` of an installed library, '' when it is not installed or fails to import."""
    try:
        return str(importlib.import_module(name).__version__)
    except Exception:  # noqa: BLE001 - optional library
        return ""


class Env:
    """The device a script measures and the run facts its rows repeat.

    Attributes: `device` (torch.device), `cuda`, `smoke` (a debug run: scripts shrink their shapes and timers take
    fewer samples), `name` (torch's device name, 'cpu-debug' on the CPU), `sm_count`, `l2_bytes` (torch's
    L2_cache_size; L2_FALLBACK_BYTES when torch does not report it, L2_CPU_BYTES on the CPU, only to size flushes),
    `mem_bytes` ('' on the CPU), `driver`, `date` (UTC), `slug`. `facts(columns)` gives the run facts a CSV names."""

    #: run facts Env knows, by CSV column
    FACTS = ("device", "sm_count", "l2_bytes", "gpu_mem_bytes", "torch_version", "cuda_version", "triton_version",
             "transformers_version", "cupy_version", "driver_version", "date")

    def __init__(self, device: str = "cuda", smoke: bool = False):
        import torch

        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.smoke = smoke
        self.date = utc_date()
        if self.cuda:
            props = torch.cuda.get_device_properties(self.device)
            self.name = props.name
            self.sm_count = props.multi_processor_count
            self.l2_bytes = int(getattr(props, "L2_cache_size", L2_FALLBACK_BYTES))
            self.mem_bytes = props.total_memory
        else:
            self.name = "cpu-debug"
            self.sm_count = os.cpu_count() or 1
            self.l2_bytes = L2_CPU_BYTES
            self.mem_bytes = ""
        self.driver = driver_version()
        self.slug = device_slug(self.name)
        self._flush = None

    def facts(self, columns) -> dict:
        """The run facts among `columns` (library versions are looked up only when a column names them)."""
        import torch

        known = {"device": lambda: self.name, "sm_count": lambda: self.sm_count, "l2_bytes": lambda: self.l2_bytes,
                 "gpu_mem_bytes": lambda: self.mem_bytes, "torch_version": lambda: torch.__version__,
                 "cuda_version": lambda: torch.version.cuda or "",
                 "triton_version": lambda: library_version("triton"),
                 "transformers_version": lambda: library_version("transformers"),
                 "cupy_version": lambda: library_version("cupy"),
                 "driver_version": lambda: self.driver, "date": lambda: self.date}
        return {c: known[c]() for c in columns if c in known}

    def sync(self):
        if self.cuda:
            import torch

            torch.cuda.synchronize(self.device)

    def free(self, full: bool = False):
        """Return cached device memory (and, `full`, collect garbage first)."""
        if full:
            gc.collect()
        if self.cuda:
            import torch

            torch.cuda.empty_cache()

    def mem_free(self) -> int:
        """Free device memory in bytes (64 GiB on the CPU debug path)."""
        if self.cuda:
            import torch

            free, _total = torch.cuda.mem_get_info(self.device)
            return free
        return 64 * GiB

    def flush_l2(self):
        """Write 2 x L2 bytes of one buffer (allocated once): what the L2 held before is evicted."""
        if self._flush is None:
            import torch

            self._flush = torch.empty(int(2 * self.l2_bytes // 4) + 1, dtype=torch.float32, device=self.device)
        self._flush.fill_(1.0)


# ----------------------------------------------------------------------------------------------------------------
# output
# ----------------------------------------------------------------------------------------------------------------
class Sink:
    """A CSV with the script's `columns`, written and flushed row by row (a killed run keeps its rows).

    Every row carries `script_version` = `version` and the run `facts` (e.g. `Env.facts(columns)`) among the
    columns; `write(fields)` adds the row's own fields. A field outside the columns raises (`extras='raise'`) or
    is left out (`extras='ignore'`). `rows` keeps the written rows (facts included), `n` counts them."""

    def __init__(self, path: str, columns, version, facts: dict | None = None, extras: str = "raise"):
        self.path = path
        self.columns = list(columns)
        self.base = {k: v for k, v in (facts or {}).items() if k in self.columns}
        if "script_version" in self.columns:
            self.base["script_version"] = version
        self.fh = open(path, "w", newline="")
        self.w = csv.DictWriter(self.fh, fieldnames=self.columns, restval="", extrasaction=extras)
        self.w.writeheader()
        self.fh.flush()
        self.rows: list[dict] = []

    @property
    def n(self) -> int:
        return len(self.rows)

    def write(self, fields: dict) -> dict:
        row = dict(self.base)
        row.update(fields)
        self.w.writerow(row)
        self.fh.flush()
        self.rows.append(row)
        return row

    def close(self):
        self.fh.close()


def write_rows(out_dir: str, prefix: str, device: str, date: str, columns: list[str], rows: list[dict]) -> str:
    """Write `rows` (missing columns empty, other keys left out) to out_dir/<prefix>_<device-slug>_<date>.csv at
    once; return the path."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{prefix}_{device_slug(device)}_{date}.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in columns})
    print(f"wrote {path} ({len(rows)} rows)")
    return path


# ----------------------------------------------------------------------------------------------------------------
# statistics
# ----------------------------------------------------------------------------------------------------------------
def quantile(xs, q: float) -> float:
    """The q-quantile of xs, linear interpolation between order statistics (numpy's default); nan when empty."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def stats(xs, calls: int) -> dict:
    """{median, p20, p80, reps, calls} of per-call samples (us) taken `calls` calls at a time."""
    return {"median": statistics.median(xs), "p20": quantile(xs, 0.2), "p80": quantile(xs, 0.8), "reps": len(xs),
            "calls": calls}


# ----------------------------------------------------------------------------------------------------------------
# timers
# ----------------------------------------------------------------------------------------------------------------
def spin(cuda: bool, us: float = SPIN_US, cycles_per_us: float = SPIN_CYCLES_PER_US):
    """Keep the GPU busy for about `us` microseconds (torch.cuda._sleep) while the host enqueues the timed sample:
    events recorded after it bracket device time only, not the host's launches. A no-op on the CPU, for `us` <= 0
    or when torch has no _sleep."""
    if not cuda or us <= 0:
        return
    import torch

    if hasattr(torch.cuda, "_sleep"):
        torch.cuda._sleep(int(us * cycles_per_us))


def capture_graph(env: Env, fn, calls: int, error_mode: str | None = None):
    """A CUDA graph of fn(0) ... fn(calls - 1) back to back (fn(1) first runs once on a side stream, as CUDA graph
    capture requires), replayed once. error_mode: torch.cuda.graph's capture_error_mode (None: torch's default;
    "relaxed" for kernels that touch the legacy default stream while captured, e.g. a hand-written all-reduce)."""
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn(1)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, **({} if error_mode is None else {"capture_error_mode": error_mode})):
        for i in range(calls):
            fn(i)
    g.replay()
    env.sync()
    return g


def replay_us(env: Env, g, spin_first: bool = True) -> float:
    """Device time of one replay of graph g, CUDA events around it (after a spin unless spin_first=False)."""
    import torch

    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if spin_first:
        spin(env.cuda)
    a.record()
    g.replay()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1000.0


def time_graph(env: Env, fn, n_sets: int = 1, target_us: float = 400.0, reps: int = 7, max_calls: int = 256,
               error_mode: str | None = None) -> dict:
    """Median device time of one call, calls captured back to back in a CUDA graph and replayed: the kernel's device
    time plus the graph's gap between nodes. fn(i) runs one call on input set i % n_sets (the caller rotates).

    Every timed replay follows a spin (SPIN_US), so its events bracket device time only; the call count comes from
    a first replay of the graph (one call's device time, not an eager estimate, which is host-bound for short
    kernels), so that one replay spans ~target_us. On the CPU: wall clock of single calls. error_mode: see
    capture_graph. Returns `stats`."""
    fn(0)
    env.sync()
    if not env.cuda:
        xs = []
        for r in range(3 if env.smoke else 5):
            t0 = time.perf_counter()
            fn(r)
            xs.append((time.perf_counter() - t0) * 1e6)
        return stats(xs, 1)
    import torch

    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    spin(env.cuda)
    a.record()
    for i in range(3):
        fn(i)
    b.record()
    b.synchronize()
    est = max(a.elapsed_time(b) * 1000.0 / 3, 1.0)
    calls = int(min(max_calls, max(2, math.ceil(target_us / est))))
    g = capture_graph(env, fn, calls, error_mode)
    per = max(replay_us(env, g) / calls, 0.05)
    want = int(min(max_calls, max(2, math.ceil(target_us / per))))
    if want > 1.5 * calls:   # the eager estimate was host-bound: recapture with enough calls
        del g
        calls = want
        g = capture_graph(env, fn, calls, error_mode)
    xs = [replay_us(env, g) / calls for _ in range(reps)]
    del g
    return stats(xs, calls)


def replay_times(g, reps: int, env: Env, per: int = 1) -> tuple[list[float], list[float]]:
    """`reps` replays of CUDA graph `g`, each after a sync: (device time by CUDA events, wall clock including the
    replay call and the sync), in us, divided by `per` (the kernels in the graph, for a per-kernel time)."""
    import torch

    ev, wall = [], []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        env.sync()
        t0 = time.perf_counter()
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        wall.append((time.perf_counter() - t0) * 1e6 / per)
        ev.append(a.elapsed_time(b) * 1000.0 / per)
    return ev, wall


def time_cold(env: Env, fn, reps: int = 9) -> dict:
    """One eager call after an L2 flush, CUDA events around it: launch latency + device time of a lone call
    (wall clock on the CPU). Returns `stats`."""
    fn(0)
    env.sync()
    xs = []
    for r in range(reps):
        env.flush_l2()
        env.sync()
        if env.cuda:
            import torch

            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn(r)
            b.record()
            b.synchronize()
            xs.append(a.elapsed_time(b) * 1000.0)
        else:
            t0 = time.perf_counter()
            fn(r)
            xs.append((time.perf_counter() - t0) * 1e6)
    return stats(xs, 1)


class Bencher:
    """Eager calls back to back on the GPU: after a spin long enough for the host to enqueue a whole sample, CUDA
    events bracket `inner` calls (inner sized so a sample lasts ~target_sample_us); `reps` samples within a time
    budget (`scale` scales every budget). fn(i) runs one call on rotation set i % nrot (the caller rotates)."""

    def __init__(self, env: Env, scale: float = 1.0, cycles_per_us: float = 1800):
        import torch

        self.env = env
        self.scale = scale
        self.has_sleep = env.cuda and hasattr(torch.cuda, "_sleep")
        self.cycles_per_us = cycles_per_us  # only sizes the spin kernel; exactness does not matter

    def _spin(self, us):
        if self.has_sleep and us > 0:
            spin(True, us, self.cycles_per_us)

    def run(self, fn, nrot=1, *, budget_s=0.06, min_reps=5, max_reps=40, warmup=2,
            target_sample_us=150.0, max_inner=64) -> dict:
        """{median, p20, p80, reps, inner, nrot}: per-call times in us (wall clock of single calls on the CPU)."""
        env = self.env
        budget_s *= self.scale
        for i in range(warmup):
            fn(i)
        env.sync()
        if not env.cuda:
            times = []
            t_end = time.perf_counter() + budget_s
            k = 0
            while len(times) < max(min_reps, 1) or (time.perf_counter() < t_end and len(times) < max_reps):
                t0 = time.perf_counter()
                fn(k)
                times.append((time.perf_counter() - t0) * 1e6)
                k += 1
            return dict(median=quantile(times, 0.5), p20=quantile(times, 0.2), p80=quantile(times, 0.8),
                        reps=len(times), inner=1, nrot=nrot)
        import torch

        # estimate one call
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self._spin(200)
        s.record()
        h0 = time.perf_counter()
        for i in range(3):
            fn(i)
        host_us = (time.perf_counter() - h0) * 1e6 / 3   # host cost to enqueue one call
        e.record()
        e.synchronize()
        est = max(s.elapsed_time(e) * 1000.0 / 3, 0.5)
        inner = int(min(max_inner, max(1, math.ceil(target_sample_us / est))))
        sample_us = est * inner
        reps = int(min(max_reps, max(min_reps, budget_s * 1e6 / (sample_us + 20.0))))
        # spin long enough that the host enqueues the whole sample before the GPU reaches it
        spin_us = min(30.0 + 1.5 * host_us * inner, 5000.0)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        k = 0
        for r in range(reps):
            self._spin(spin_us)
            starts[r].record()
            for _ in range(inner):
                fn(k)
                k += 1
            ends[r].record()
        ends[-1].synchronize()
        times = [starts[r].elapsed_time(ends[r]) * 1000.0 / inner for r in range(reps)]
        return dict(median=quantile(times, 0.5), p20=quantile(times, 0.2), p80=quantile(times, 0.8),
                    reps=reps, inner=inner, nrot=nrot)


class LaunchTimer:
    """Raw kernel launches through CuPy, timed like `Bencher`: CUDA events around `inner` back-to-back launches
    (inner sized to ~target_us of GPU time, 10..200), after the caller's spin kernel `spin_fn(us)` held long enough
    for the host to enqueue them all; `repeats` samples. A sample whose host enqueue outran spin + GPU time is
    counted 'host-bound' in the note."""

    def __init__(self, spin_fn, repeats: int, target_us: float = 2500.0):
        self.spin = spin_fn
        self.repeats = repeats
        self.target_us = target_us
        self.host_per_launch_us = 8.0

    def run(self, launch, nrot: int = 1):
        """launch(i) enqueues call i (i selects the rotation buffer). Returns (median, p20, p80, reps, note)."""
        import cupy as cp
        import numpy as np

        for i in range(3):
            launch(i % nrot)
        cp.cuda.Device().synchronize()
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        # estimate per-launch GPU time
        self.spin(200 + 5 * 3 * self.host_per_launch_us)
        e0.record()
        t0 = time.perf_counter()
        for i in range(5):
            launch(i % nrot)
        th = time.perf_counter() - t0
        e1.record()
        e1.synchronize()
        est = cp.cuda.get_elapsed_time(e0, e1) * 1000.0 / 5
        self.host_per_launch_us = max(2.0, min(60.0, 0.5 * self.host_per_launch_us + 0.5 * th * 1e6 / 5))
        inner = int(max(10, min(200, round(self.target_us / max(est, 1.0)))))
        samples, hostbound = [], 0
        j = 0
        for _ in range(self.repeats):
            spin_us = 100.0 + 1.5 * inner * self.host_per_launch_us
            self.spin(spin_us)
            e0.record()
            t0 = time.perf_counter()
            for _i in range(inner):
                launch(j % nrot)
                j += 1
            th = (time.perf_counter() - t0) * 1e6
            e1.record()
            e1.synchronize()
            gpu_us = cp.cuda.get_elapsed_time(e0, e1) * 1000.0
            if th > 0.9 * (spin_us + gpu_us):
                hostbound += 1
            self.host_per_launch_us = max(self.host_per_launch_us, th / inner)
            samples.append(gpu_us / inner)
        note = f"inner={inner}"
        if hostbound:
            note += f";host-bound {hostbound}/{self.repeats}"
        arr = np.asarray(samples, dtype=np.float64)
        return (float(np.median(arr)), float(np.quantile(arr, 0.2)), float(np.quantile(arr, 0.8)), len(samples),
                note)


def cupti_durations(env: Env, fn) -> tuple[int, float]:
    """(kernels, sum of their device durations in us) of one eager call of fn under torch.profiler (CUPTI), after
    one call outside it; memcpy / memset records are not kernels."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    env.sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        env.sync()
    n, tot = 0, 0.0
    for e in prof.events():
        if e.device_type.name != "CUDA" or "Memcpy" in e.name or "Memset" in e.name:
            continue
        n += 1
        tot += float(getattr(e, "device_time_total", 0.0) or 0.0)
    return n, tot
