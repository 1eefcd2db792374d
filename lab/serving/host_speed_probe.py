#!/usr/bin/env python3
"""What sets the host time of HF continuous batching's eager forward? Three timers interleaved in one thread.

    python lab/serving/host_speed_probe.py --out DIR --seconds 160        # on the GPU machine
    python lab/serving/host_speed_probe.py --out /tmp/p --smoke           # CPU, tiny model (the code path only)

The engine is the one ``hf_cb_runtime.py`` builds (LlamaForCausalLM of Llama-3.1-8B's shape, random bf16 weights,
``paged|sdpa``, block 256, ``max_batch_tokens`` 8192, its ``StepTracer`` installed) serving ONE request with a
2048-token prompt and an output too long to finish, so every step is the same one-row decode. In the engine's own
generation thread, right before every step, this script runs

  (a) ``py``: a fixed pure-Python integer loop (no torch; ~5 ms on a fast core): the host's Python speed;
  (b) ``add``: 1,600 in-place adds on a 256-element CUDA tensor (torch dispatch + the driver's launch), the loop
      timed alone, then CUDA events for its device time and a synchronize;
  (b2) ``drv``: 1,600 ``torch.cuda._sleep(0)`` launches (a thin binding over the driver's launch: little Python);

then the step itself runs and (c) is its ``launch_s`` as the tracer records it (the host issuing the eager forward
+ sampling, ``ModelRunner.compute_batch``). Around (c) the thread's CPU time (``time.thread_time``), its run-queue
wait and time on CPU (``/proc/thread-self/schedstat``), its voluntary / involuntary context switches
(``/proc/thread-self/status``) and the CPU it ran on are taken; per iteration also ``/proc/stat`` (whole machine and
that CPU: user, system, idle, steal), that CPU's clock (cpufreq or ``/proc/cpuinfo`` MHz), the GPU's SM clock,
power and utilization read through NVML (read only), and the Python garbage collections (``gc.callbacks``).

One thing is varied, in alternating blocks (default 20 s): the client thread either polls the engine like the
harness (``get_result(timeout=2 ms)`` in a loop: a GIL hand-off every ~2 ms) or sleeps (no hand-off). A second
process pinned to another CPU runs (a) every 50 ms all along (``monitor``): does the machine slow down as a whole,
or the engine's core only? A few steps are run under ``torch.cuda.set_sync_debug_mode('warn')`` (does the forward
synchronize with the device?) and a few under ``torch.profiler`` (where does the host time go, in a fast and a slow
step?); those steps are flagged and left out of the statistics.

Output (``--out``): ``hostprobe_{iters,monitor,gc}_<gpu>_<date>.csv.gz``, ``hostprobe_config_<gpu>_<date>.json``
(versions, CPU model, affinity, sync warnings, profiler tables) and a log; the table printed last groups the
iterations by the level of (c).
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import gc
import gzip
import json
import math
import os
import platform
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

PY_LOOP_N = 60000          # iterations of the pure-Python probe (~5 ms on a ~3 GHz core under CPython 3.12)
N_LAUNCH = 1600            # launches of the launch probes: about the eager forward's kernel count (1,530-1,690)
SCRIPT_VERSION = 1

ITER_COLUMNS = [
    "it", "t_s", "mode", "flag", "py_s", "py_cpu_s", "add_s", "add_cpu_s", "add_gpu_s", "add_sync_s", "drv_s",
    "drv_cpu_s", "c_launch_s", "c_sync_s", "c_gpu_span_s", "c_prep_s", "c_sched_s", "c_update_s", "c_gap_s",
    "c_cpu_s", "c_run_ns", "c_wait_ns", "c_vcsw", "c_nvcsw", "c_gc_n", "c_gc_s", "keys", "cpu_a", "cpu_c0", "cpu_c1",
    "mhz", "sys_user", "sys_system", "sys_idle", "sys_steal", "cpu_user", "cpu_system", "cpu_idle", "cpu_steal",
    "proc_nvcsw", "gpu_sm_mhz", "gpu_mem_mhz", "gpu_power_w", "gpu_util", "gpu_clock_reasons", "gc_n", "gc_s"]
MONITOR_COLUMNS = ["t_s", "cpu", "py_s", "py_cpu_s", "sys_steal", "sys_idle", "cpu_steal", "cpu_idle"]
GC_COLUMNS = ["t_s", "generation", "duration_s", "collected"]


# ----------------------------------------------------------------------------------------------------------------
# probes and readers (pure Python; also used by the tests)
# ----------------------------------------------------------------------------------------------------------------
def py_work(n: int = PY_LOOP_N) -> int:
    """The fixed pure-Python work: integer arithmetic in a loop (no allocation beyond small ints)."""
    s = 0
    for i in range(n):
        s = (s + i * i) ^ (i >> 3)
    return s


def timed(fn, *args) -> tuple[float, float]:
    """(wall seconds, this thread's CPU seconds) of fn(*args)."""
    t0, c0 = time.perf_counter(), time.thread_time()
    fn(*args)
    return time.perf_counter() - t0, time.thread_time() - c0


STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def read_proc_stat(text: str | None = None) -> dict:
    """{'cpu': [8 jiffy counters], 'cpu0': [...], ...} from /proc/stat (user nice system idle iowait irq softirq
    steal)."""
    if text is None:
        with open("/proc/stat") as f:
            text = f.read()
    out = {}
    for line in text.splitlines():
        if not line.startswith("cpu"):
            continue
        p = line.split()
        v = [int(x) for x in p[1:9]] + [0] * max(0, 8 - len(p[1:9]))
        out[p[0]] = v
    return out


def stat_shares(a: list[int], b: list[int]) -> dict:
    """Shares of user (+nice), system (+irq, softirq), idle (+iowait) and steal between two /proc/stat rows."""
    d = [max(0, y - x) for x, y in zip(a, b)]
    tot = sum(d)
    if tot <= 0:
        return {"user": math.nan, "system": math.nan, "idle": math.nan, "steal": math.nan}
    return {"user": (d[0] + d[1]) / tot, "system": (d[2] + d[5] + d[6]) / tot, "idle": (d[3] + d[4]) / tot,
            "steal": d[7] / tot}


def thread_cpu(text: str | None = None) -> int:
    """The CPU the calling thread last ran on: field 39 of /proc/thread-self/stat (after the ')' of the name)."""
    if text is None:
        try:
            with open("/proc/thread-self/stat") as f:
                text = f.read()
        except OSError:
            return -1
    rest = text[text.rindex(")") + 2:].split()
    return int(rest[36])          # field 39 overall; fields 3.. follow the name


def ctx_switches(text: str | None = None, path: str = "/proc/thread-self/status") -> tuple[int, int]:
    """(voluntary, nonvoluntary) context switches from a /proc status file."""
    if text is None:
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            return (-1, -1)
    v = nv = -1
    for line in text.splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            v = int(line.split()[1])
        elif line.startswith("nonvoluntary_ctxt_switches:"):
            nv = int(line.split()[1])
    return v, nv


def schedstat() -> tuple[int, int]:
    """(ns on CPU, ns waiting on a run queue) of the calling thread (/proc/thread-self/schedstat)."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            p = f.read().split()
        return int(p[0]), int(p[1])
    except (OSError, IndexError, ValueError):
        return (-1, -1)


def cpu_mhz(cpu: int, cpuinfo: str | None = None) -> float:
    """That CPU's clock: cpufreq's scaling_cur_freq if the kernel has it, else its 'cpu MHz' in /proc/cpuinfo (on a
    VM often the nominal clock), else nan."""
    try:
        with open(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq") as f:
            return int(f.read()) / 1000.0
    except (OSError, ValueError):
        pass
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo") as f:
                cpuinfo = f.read()
        except OSError:
            return math.nan
    cur = None
    for line in cpuinfo.splitlines():
        if line.startswith("processor"):
            cur = int(line.split(":")[1])
        elif line.startswith("cpu MHz") and cur == cpu:
            return float(line.split(":")[1])
    return math.nan


class GcLog:
    """Timestamps of Python's garbage collections (gc.callbacks)."""

    def __init__(self):
        self.events: list[tuple[float, int, float, int]] = []      # (start, generation, duration, collected)
        self._start: float | None = None

    def __call__(self, phase, info):
        if phase == "start":
            self._start = time.perf_counter()
        elif self._start is not None:
            t = self._start
            self.events.append((t, int(info.get("generation", -1)), time.perf_counter() - t,
                                int(info.get("collected", 0))))
            self._start = None

    def between(self, t0: float, t1: float) -> tuple[int, float]:
        n, s = 0, 0.0
        for t, _, d, _ in reversed(self.events):
            if t < t0:
                break
            if t <= t1:
                n += 1
                s += d
        return n, s


def levels(values: list[float], rel_gap: float = 0.15) -> list[int]:
    """Group values into levels: sort, cut where the next value is more than rel_gap above the previous, and return
    each value's level index (0 = fastest). Used for the table only."""
    if not values:
        return []
    order = sorted(range(len(values)), key=lambda i: values[i])
    lev = [0] * len(values)
    k = 0
    prev = values[order[0]]
    for i in order:
        if values[i] > prev * (1 + rel_gap):
            k += 1
        lev[i] = k
        prev = values[i]
    return lev


def median(x: list[float]) -> float:
    x = sorted(v for v in x if v == v)
    if not x:
        return math.nan
    m = len(x) // 2
    return x[m] if len(x) % 2 else 0.5 * (x[m - 1] + x[m])


def write_csv_gz(path: str, columns: list[str], rows: list[dict]) -> str:
    with gzip.open(path, "wt", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (format(v, ".9g") if isinstance(v, float) else v) for k, v in r.items()})
    return path


# ----------------------------------------------------------------------------------------------------------------
# the monitor process (another CPU, the same pure-Python probe)
# ----------------------------------------------------------------------------------------------------------------
def monitor(out_csv: str, seconds: float, period: float) -> int:
    rows = []
    t_end = time.perf_counter() + seconds
    st0 = read_proc_stat()
    while time.perf_counter() < t_end:
        t = time.perf_counter()
        w, c = timed(py_work)
        st1 = read_proc_stat()
        cpu = thread_cpu()
        key = f"cpu{cpu}"
        s_all = stat_shares(st0["cpu"], st1["cpu"])
        s_cpu = stat_shares(st0.get(key, st1.get(key, [0] * 8)), st1.get(key, [0] * 8))
        st0 = st1
        rows.append({"t_s": t, "cpu": cpu, "py_s": w, "py_cpu_s": c, "sys_steal": s_all["steal"],
                     "sys_idle": s_all["idle"], "cpu_steal": s_cpu["steal"], "cpu_idle": s_cpu["idle"]})
        time.sleep(max(0.0, period - (time.perf_counter() - t)))
    write_csv_gz(out_csv, MONITOR_COLUMNS, rows)
    return 0


# ----------------------------------------------------------------------------------------------------------------
# the probe inside the engine's generation thread
# ----------------------------------------------------------------------------------------------------------------
class Probe:
    def __init__(self, torch, cuda: bool, tracer, gclog: GcLog, t0: float):
        self.torch = torch
        self.cuda = cuda
        self.tracer = tracer
        self.gclog = gclog
        self.t0 = t0
        self.rows: list[dict] = []
        self.active = False
        self.mode = "poll"
        self.cur: dict | None = None
        self.st = None
        self.it = 0
        self.flag_next = ""          # 'sync' / 'prof' for the next step
        self.sync_warnings: list[dict] = []
        self.prof_tables: list[dict] = []
        self.nvml = None
        self.x = torch.zeros(256, device="cuda") if cuda else None
        if cuda:
            try:
                import pynvml

                pynvml.nvmlInit()
                self.nvml = (pynvml, pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device()))
            except Exception as ex:  # noqa: BLE001 - GPU readings are optional
                print(f"NVML not available: {ex}", flush=True)

    def gpu_read(self) -> dict:
        if self.nvml is None:
            return {}
        nv, h = self.nvml
        out = {}
        for k, f in (("gpu_sm_mhz", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
                     ("gpu_mem_mhz", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
                     ("gpu_power_w", lambda: nv.nvmlDeviceGetPowerUsage(h) / 1000.0),
                     ("gpu_util", lambda: nv.nvmlDeviceGetUtilizationRates(h).gpu),
                     ("gpu_clock_reasons", lambda: nv.nvmlDeviceGetCurrentClocksEventReasons(h))):
            try:
                out[k] = f()
            except Exception:  # noqa: BLE001 - one reading missing is fine
                out[k] = ""
        return out

    def add_probe(self):
        torch = self.torch
        x = self.x
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        t0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(N_LAUNCH):
            x.add_(1.0)
        t1, c1 = time.perf_counter(), time.thread_time()
        e1.record()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        return t1 - t0, c1 - c0, e0.elapsed_time(e1) * 1e-3, t2 - t1

    def drv_probe(self):
        torch = self.torch
        t0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(N_LAUNCH):
            torch.cuda._sleep(0)
        t1, c1 = time.perf_counter(), time.thread_time()
        torch.cuda.synchronize()
        return t1 - t0, c1 - c0

    # called by the wrappers, in the generation thread ------------------------------------------------------------
    def before_step(self):
        if not self.active:
            self.cur = None
            return
        r = {"it": self.it, "t_s": time.perf_counter() - self.t0, "mode": self.mode, "flag": self.flag_next}
        self.flag_next = ""
        r["cpu_a"] = thread_cpu()
        r["py_s"], r["py_cpu_s"] = timed(py_work)
        if self.cuda:
            r["add_s"], r["add_cpu_s"], r["add_gpu_s"], r["add_sync_s"] = self.add_probe()
            r["drv_s"], r["drv_cpu_s"] = self.drv_probe()
        r.update(self.gpu_read())
        r["mhz"] = cpu_mhz(r["cpu_a"])
        r["proc_nvcsw"] = ctx_switches(path="/proc/self/status")[1]
        r["_st"] = read_proc_stat()
        r["_tgc"] = time.perf_counter()
        self.cur = r

    def around_compute(self, fn):
        r = self.cur
        if r is None:
            return fn()
        r["cpu_c0"] = thread_cpu()
        v0, nv0 = ctx_switches()
        run0, wait0 = schedstat()
        prof = None
        if r["flag"] == "sync" and not self.cuda:
            r["flag"] = "nosync"
        if r["flag"] == "sync":
            self.torch.cuda.set_sync_debug_mode("warn")
        elif r["flag"] == "prof":
            acts = [self.torch.profiler.ProfilerActivity.CPU]
            if self.cuda:
                acts.append(self.torch.profiler.ProfilerActivity.CUDA)
            try:
                prof = self.torch.profiler.profile(activities=acts)
                prof.__enter__()
            except Exception as ex:  # noqa: BLE001 - the profile is informational
                self.prof_tables.append({"it": r["it"], "error": f"{type(ex).__name__}: {str(ex)[:120]}"})
                prof = None
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            if r["flag"] == "sync":
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    out = fn()
                for w in caught:
                    self.sync_warnings.append({"it": r["it"], "message": str(w.message)[:300],
                                               "file": f"{w.filename}:{w.lineno}"})
                r["sync_warnings"] = len(caught)
            else:
                out = fn()
        finally:
            t1, c1 = time.perf_counter(), time.thread_time()
            if r["flag"] == "sync":
                self.torch.cuda.set_sync_debug_mode(0)
            if prof is not None:
                try:
                    prof.__exit__(None, None, None)
                except Exception as ex:  # noqa: BLE001 - the profile is informational
                    self.prof_tables.append({"it": r["it"], "error": f"{type(ex).__name__}: {str(ex)[:120]}"})
                    prof = None
        run1, wait1 = schedstat()
        v1, nv1 = ctx_switches()
        r["cpu_c1"] = thread_cpu()
        r["c_cpu_s"] = c1 - c0
        r["c_run_ns"], r["c_wait_ns"] = run1 - run0, wait1 - wait0
        r["c_vcsw"], r["c_nvcsw"] = v1 - v0, nv1 - nv0
        r["c_gc_n"], r["c_gc_s"] = self.gclog.between(t0, t1)
        r["_wall"] = t1 - t0
        if prof is not None:
            try:
                self.prof_tables.append(prof_table(prof, r))
            except Exception as ex:  # noqa: BLE001 - the profile is informational
                self.prof_tables.append({"it": r["it"], "error": f"{type(ex).__name__}: {str(ex)[:120]}"})
        return out

    def after_step(self):
        r = self.cur
        self.cur = None
        if r is None or not self.tracer.rows:
            return
        s = self.tracer.rows[-1]
        st1 = read_proc_stat()
        st0 = r.pop("_st")
        a = stat_shares(st0["cpu"], st1["cpu"])
        key = f"cpu{r.get('cpu_c1', -1)}"
        c = stat_shares(st0.get(key, [0] * 8), st1.get(key, [0] * 8))
        r.update({f"sys_{k}": v for k, v in a.items()})
        r.update({f"cpu_{k}": v for k, v in c.items()})
        r["gc_n"], r["gc_s"] = self.gclog.between(r.pop("_tgc"), time.perf_counter())
        r.update({"c_launch_s": s["launch_s"], "c_sync_s": s["sync_s"], "c_gpu_span_s": s["gpu_span_s"],
                  "c_prep_s": s["prep_s"], "c_sched_s": s["sched_s"], "c_update_s": s["update_s"],
                  "c_gap_s": s["gap_s"], "keys": s["keys"]})
        r.pop("_wall", None)
        self.rows.append(r)
        self.it += 1
        with self.tracer.lock:          # the tracer's rows are not needed beyond the last one
            del self.tracer.rows[:-1]


def prof_table(prof, r) -> dict:
    """Host-side self time by op / runtime call of one profiled step (the 20 largest), and the step's (a)."""
    agg = {}
    for e in prof.key_averages():
        self_us = float(getattr(e, "self_cpu_time_total", 0.0) or 0.0)
        agg[e.key] = (int(e.count), self_us)
    top = sorted(agg.items(), key=lambda kv: -kv[1][1])[:20]
    return {"it": r["it"], "py_s": r.get("py_s"), "add_s": r.get("add_s"), "wall_s": r.get("_wall"),
            "self_cpu_us_total": round(sum(v[1] for v in agg.values()), 1),
            "top": [{"name": k[:120], "count": v[0], "self_us": round(v[1], 1)} for k, v in top]}


def install(probe: Probe):
    """Wrap (at class level, outside the tracer's own wrappers) the three methods of one engine step."""
    from transformers.generation.continuous_batching import continuous_api as ca
    from transformers.generation.continuous_batching import model_runner as mr

    bp = ca.ContinuousBatchProcessor
    o_prep, o_upd = bp.prepare_next_batch, bp.update_batch
    o_comp = mr.ModelRunner.compute_batch

    def prepare_next_batch(self_):
        probe.before_step()
        r = o_prep(self_)
        if not r:
            probe.cur = None
        return r

    def compute_batch(self_, model, batch_data):
        if probe.tracer.in_replay:
            return o_comp(self_, model, batch_data)
        return probe.around_compute(lambda: o_comp(self_, model, batch_data))

    def update_batch(self_):
        o_upd(self_)
        probe.after_step()

    bp.prepare_next_batch = prepare_next_batch
    mr.ModelRunner.compute_batch = compute_batch
    bp.update_batch = update_batch


# ----------------------------------------------------------------------------------------------------------------
def summary_table(rows: list[dict]) -> list[str]:
    """One line per level of (c): its launch, and the other probes' medians in the same iterations."""
    ok = [r for r in rows if not r.get("flag") and r.get("c_launch_s", math.nan) == r.get("c_launch_s")]
    if not ok:
        return ["no iterations"]
    lev = levels([r["c_launch_s"] for r in ok])
    out = [f"{'level':>5} {'n':>5} {'poll':>5} {'c ms':>7} {'c cpu':>6} {'py ms':>6} {'add ms':>7} {'drv ms':>7} "
           f"{'c/py':>6} {'c/add':>6} {'steal%':>6} {'wait ms':>7} {'vcsw':>5} {'nvcsw':>5} {'MHz':>6} "
           f"{'SM MHz':>6} {'cpus':>10}"]
    for k in sorted(set(lev)):
        g = [r for r, v in zip(ok, lev) if v == k]
        if len(g) < 3:
            continue

        def m(key, g=g):
            return median([float(r[key]) for r in g if r.get(key, "") != ""])
        cpus = sorted({r.get("cpu_c0", -1) for r in g})
        out.append(
            f"{k:>5} {len(g):>5} {sum(r['mode'] == 'poll' for r in g):>5} {m('c_launch_s') * 1e3:7.1f} "
            f"{m('c_cpu_s') / max(m('c_launch_s'), 1e-12):6.2f} {m('py_s') * 1e3:6.2f} {m('add_s') * 1e3:7.2f} "
            f"{m('drv_s') * 1e3:7.2f} {median([r['c_launch_s'] / r['py_s'] for r in g]):6.2f} "
            f"{median([r['c_launch_s'] / r['add_s'] for r in g if r.get('add_s')]):6.2f} "
            f"{m('cpu_steal') * 100:6.2f} {m('c_wait_ns') * 1e-6:7.2f} {m('c_vcsw'):5.0f} {m('c_nvcsw'):5.0f} "
            f"{m('mhz'):6.0f} {m('gpu_sm_mhz'):6.0f} {','.join(map(str, cpus[:4])):>10}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=160.0, help="probing time (after the model is built)")
    ap.add_argument("--block-s", type=float, default=20.0, help="client poll / sleep alternation period")
    ap.add_argument("--input", type=int, default=2048, help="the request's prompt tokens")
    ap.add_argument("--monitor-cpu", type=int, default=-1, help="CPU of the monitor process (-1: the last one)")
    ap.add_argument("--date", default=dt.date.today().isoformat())
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--monitor", default="", help=argparse.SUPPRESS)       # internal: the monitor process
    a = ap.parse_args(argv)
    if a.monitor:
        return monitor(a.monitor, a.seconds, 0.05)

    import hf_cb_runtime as rt
    import records

    os.makedirs(a.out, exist_ok=True)
    log_lines: list[str] = []

    def log(s):
        print(s, flush=True)
        log_lines.append(s)

    ncpu = os.cpu_count() or 1
    mon_cpu = a.monitor_cpu if a.monitor_cpu >= 0 else ncpu - 1
    mon_proc = None
    if ncpu >= 2 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(range(ncpu)) - {mon_cpu})
    ns = argparse.Namespace(smoke=a.smoke, model="Llama-3.1-8B", attn="sdpa", seed=0, block_size=256,
                            max_batch_tokens=8192, num_blocks=1200)
    if a.smoke:
        ns.num_blocks, ns.max_batch_tokens, ns.block_size = 64, 256, 32
        a.input = min(a.input, 48)
    manager, tracer, shape, gpu, info, sdpa, versions = rt.build(ns, log)
    torch = tracer.torch
    cuda = tracer.cuda
    client = rt.Client(manager, shape["vocab"], 0)
    gclog = GcLog()
    gc.callbacks.append(gclog)
    slug = records.slug(gpu)
    files = {k: os.path.join(a.out, f"hostprobe_{k}_{slug}_{a.date}.{e}")
             for k, e in (("iters", "csv.gz"), ("monitor", "csv.gz"), ("gc", "csv.gz"), ("config", "json"),
                          ("log", "txt"))}

    # warm-up: one short request through the whole path (not recorded)
    client.submit("warm", 32, 4)
    t = time.perf_counter()
    while not client.poll(0.01) and time.perf_counter() - t < 120:
        pass
    rt.wait_idle(manager, tracer)
    with tracer.lock:
        tracer.rows.clear()

    t0 = time.perf_counter()
    probe = Probe(torch, cuda, tracer, gclog, t0)
    for _ in range(3):        # warm the probes' own kernels and code
        py_work()
        if cuda:
            probe.add_probe()
            probe.drv_probe()
    install(probe)
    if ncpu >= 2 and hasattr(os, "sched_setaffinity"):
        mon_proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--out", a.out, "--monitor",
                                     files["monitor"], "--seconds", str(a.seconds + 5)],
                                    preexec_fn=lambda: os.sched_setaffinity(0, {mon_cpu}))
    tracer.reset_counter("probe")
    probe.active = True
    client.submit("probe:0", a.input, 10 ** 6 if not a.smoke else 10 ** 4)
    special = {}           # time (s) -> flag: sync-debug steps early, profiled steps spread over the run
    for ts in (3.0, 3.3):
        special[ts] = "sync"
    for j in range(6):
        special[8.0 + j * (a.seconds - 10.0) / 6] = "prof"
    pending = sorted(special)
    t_end = t0 + a.seconds
    last_n, last_t = 0, time.perf_counter()
    while time.perf_counter() < t_end:
        now = time.perf_counter() - t0
        if len(probe.rows) != last_n:
            last_n, last_t = len(probe.rows), time.perf_counter()
        elif time.perf_counter() - last_t > 20.0:
            log(f"no step for 20 s at {now:.1f} s: stopping")
            break
        probe.mode = "poll" if int(now // a.block_s) % 2 == 0 else "sleep"
        while pending and now >= pending[0]:
            probe.flag_next = special[pending.pop(0)]
        if probe.mode == "poll":
            client.poll(0.002)          # as the harness's driver: get_result(timeout=2 ms), drained
        else:
            time.sleep(0.1)
    probe.active = False
    manager.cancel_request("probe:0")
    rt.wait_idle(manager, tracer, 30)
    manager.stop(block=True, timeout=30)
    gc.callbacks.remove(gclog)
    if mon_proc is not None:
        try:
            mon_proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            mon_proc.kill()

    rows = probe.rows
    write_csv_gz(files["iters"], ITER_COLUMNS, rows)
    write_csv_gz(files["gc"], GC_COLUMNS, [{"t_s": t - t0, "generation": g, "duration_s": d, "collected": c}
                                           for t, g, d, c in gclog.events])
    cpu_model = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu_model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        lscpu = ""
    cfg = {"script": "lab/serving/host_speed_probe.py", "script_version": SCRIPT_VERSION, "date": a.date, "gpu": gpu,
           "versions": versions, "python": platform.python_version(), "cpu_model": cpu_model, "cpu_count": ncpu,
           "lscpu": lscpu, "monitor_cpu": mon_cpu, "engine_affinity": sorted(os.sched_getaffinity(0)),
           "hf": info, "shape": shape, "input_tokens": a.input, "py_loop_n": PY_LOOP_N, "n_launch": N_LAUNCH,
           "seconds": a.seconds, "block_s": a.block_s, "switch_interval_s": sys.getswitchinterval(),
           "gc_thresholds": gc.get_threshold(), "iterations": len(rows), "sync_warnings": probe.sync_warnings[:40],
           "sync_warning_count": len(probe.sync_warnings), "profiles": probe.prof_tables,
           "clients": "poll = get_result(timeout=2 ms) in a loop (the harness's driver); sleep = time.sleep(0.1)"}
    with open(files["config"], "w") as f:
        json.dump(cfg, f, indent=1, default=str)
    tab = summary_table(rows)
    log(f"{len(rows)} iterations; {len(gclog.events)} gc collections; sync warnings: {len(probe.sync_warnings)}")
    for p in probe.prof_tables:
        if "error" in p:
            log(f"profile of it {p['it']}: {p['error']}")
            continue
        top = ", ".join(f"{x['name'][:28]} {x['self_us'] / 1e3:.1f}ms/{x['count']}" for x in p["top"][:5])
        log(f"profiled it {p['it']}: wall {p['wall_s'] * 1e3 if p['wall_s'] else 0:.0f} ms, py "
            f"{(p['py_s'] or 0) * 1e3:.2f} ms: {top}")
    for line in tab:
        log(line)
    with open(files["log"], "w") as f:
        f.write("\n".join(log_lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
